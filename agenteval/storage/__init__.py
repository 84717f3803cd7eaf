"""Store plumbing shared by the eval-set, metric and result stores.

The stores themselves live beside their data, as in the reference framework's tree: memory, local
and MySQL stores of eval sets in :mod:`agenteval.evalset`, of metrics in :mod:`agenteval.metric`
and of results in :mod:`agenteval.evalresult`. This package holds what they share and a user may
need: where the local stores put their files (:class:`Locator`, :class:`SuffixLocator`), and the
MySQL stores' named instances, DSNs and schema. The MySQL stores need the ``mysql`` extra
(PyMySQL): ``pip install 'agenteval[mysql]'``. Importing them does not; constructing one does.
Example::

    from agenteval.evalresult import MySQLEvalResultManager
    from agenteval.storage import register_mysql_instance

    register_mysql_instance("evals", dsn="mysql://root:secret@127.0.0.1:3306/evals")
    results = MySQLEvalResultManager(instance="evals", table_prefix="trpc")

The DDL of each MySQL store ships with the package (``schema.sql`` for results,
``evalset_schema.sql``, ``metric_schema.sql``); :func:`schema_text` returns it for a table prefix,
for creating the tables by hand.
"""

from agenteval.storage._locator import Locator, SuffixLocator
from agenteval.storage._mysql_client import parse_dsn, register_mysql_instance, unregister_mysql_instance
from agenteval.storage._mysql_schema import normalize_table_prefix, schema_text, table_name

__all__ = [
    "Locator",
    "SuffixLocator",
    "normalize_table_prefix",
    "parse_dsn",
    "register_mysql_instance",
    "schema_text",
    "table_name",
    "unregister_mysql_instance",
]
