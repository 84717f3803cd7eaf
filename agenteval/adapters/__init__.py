"""Runners for agents built with agent frameworks, one module per framework, each an optional extra.

- :mod:`agenteval.adapters.adk`: Google ADK (``pip install 'agenteval[adk]'``)
- :mod:`agenteval.adapters.pydantic_ai`: pydantic-ai (``agenteval[pydantic-ai]``)
- :mod:`agenteval.adapters.langgraph`: LangGraph (``agenteval[langgraph]``)
- :mod:`agenteval.adapters.openai_agents`: OpenAI Agents SDK (``agenteval[openai-agents]``)

Importing this package imports no framework; each module imports its framework when it is imported. The package
itself exports no names: import the module you need.
"""

__all__: list[str] = []
