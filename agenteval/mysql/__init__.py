"""MySQL (and MariaDB) stores for eval sets, metrics and results, on the reference framework's tables.

Needs the ``mysql`` extra (PyMySQL): ``pip install 'agenteval[mysql]'``. Importing this package
does not; constructing a store does. Example::

    from agenteval.mysql import MySQLEvalResultManager

    results = MySQLEvalResultManager("mysql://root:secret@127.0.0.1:3306/evals", table_prefix="trpc")
"""

from agenteval.mysql.client import parse_dsn, register_mysql_instance, unregister_mysql_instance
from agenteval.mysql.evalsets import MySQLEvalSetManager
from agenteval.mysql.metrics import MySQLMetricManager
from agenteval.mysql.results import MySQLEvalResultManager
from agenteval.mysql.schema import normalize_table_prefix, schema_text, table_name

__all__ = [
    "MySQLEvalResultManager",
    "MySQLEvalSetManager",
    "MySQLMetricManager",
    "normalize_table_prefix",
    "parse_dsn",
    "register_mysql_instance",
    "schema_text",
    "table_name",
    "unregister_mysql_instance",
]
