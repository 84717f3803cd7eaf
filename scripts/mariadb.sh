# Make sure a MariaDB server answers at 127.0.0.1:3306 (user root, empty password, database test).
# Sourced by scripts/test. Installs the server with apt and starts it when needed, which takes
# root; returns non-zero (after saying why) when no server can be had.
_mariadb_answers() {
  command -v mariadb >/dev/null 2>&1 && mariadb -h127.0.0.1 -P3306 -uroot -e 'SELECT 1' >/dev/null 2>&1
}

ensure_mariadb() {
  if _mariadb_answers; then
    mariadb -h127.0.0.1 -P3306 -uroot -e 'CREATE DATABASE IF NOT EXISTS test'
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
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  for _ in $(seq 1 60); do
    _mariadb_answers && break
    sleep 1
  done
  mariadb -h127.0.0.1 -P3306 -uroot -e 'CREATE DATABASE IF NOT EXISTS test' \
    || { echo "[mariadb] the server at 127.0.0.1:3306 does not accept connections" >&2; return 1; }
}
