# Make sure a MariaDB server answers at 127.0.0.1:3306 (user root, empty password, database test)
# and accepts statements of MARIADB_MAX_ALLOWED_PACKET bytes. Sourced by scripts/test. Installs the
# server with apt and starts it when needed, which takes root; returns non-zero (after saying why)
# when no server can be had.

# The MySQL result store writes a whole result in one statement: a 20,000-case result (one turn, a
# tool call, two metrics) is ~45 MB, far over the server's default 16 MiB. 256 MiB leaves headroom.
MARIADB_MAX_ALLOWED_PACKET=268435456

_mariadb_answers() {
  command -v mariadb >/dev/null 2>&1 && mariadb -h127.0.0.1 -P3306 -uroot -e 'SELECT 1' >/dev/null 2>&1
}

# Create the test database and raise (never lower) the running server's max_allowed_packet; new
# connections get it, and it lasts until the server restarts.
_mariadb_prepare() {
  mariadb -h127.0.0.1 -P3306 -uroot -e 'CREATE DATABASE IF NOT EXISTS test' || return 1
  mariadb -h127.0.0.1 -P3306 -uroot -e "SET GLOBAL max_allowed_packet = \
    GREATEST(@@GLOBAL.max_allowed_packet, $MARIADB_MAX_ALLOWED_PACKET)" \
    || echo "[mariadb] WARNING: could not raise max_allowed_packet to $MARIADB_MAX_ALLOWED_PACKET;" \
      "the test that saves a result larger than 16 MiB will fail" >&2
}

ensure_mariadb() {
  if _mariadb_answers; then
    _mariadb_prepare
    return
  fi
  if [ "$(id -u)" != "0" ]; then
    echo "[mariadb] no server at 127.0.0.1:3306, and installing or starting one needs root" >&2
    return 1
  fi
  if ! command -v mariadb >/dev/null 2>&1 || [ ! -x /usr/sbin/mariadbd ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
      echo "[mariadb] mariadb-server is not installed and apt-get is not available to install it" >&2
      return 1
    fi
    echo "[mariadb] installing mariadb-server"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq mariadb-server >/dev/null \
      || { echo "[mariadb] apt-get could not install mariadb-server" >&2; return 1; }
  fi
  echo "[mariadb] starting the server"
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd \
    -- --max-allowed-packet="$MARIADB_MAX_ALLOWED_PACKET"
  for _ in $(seq 1 60); do
    _mariadb_answers && break
    sleep 1
  done
  _mariadb_prepare || { echo "[mariadb] the server at 127.0.0.1:3306 does not accept connections" >&2; return 1; }
}
