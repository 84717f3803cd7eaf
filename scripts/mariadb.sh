# Make sure a MariaDB server answers at 127.0.0.1:3306 (user root, empty password, database test).
# Sourced by scripts/test. Installs the server with apt when it is missing.
ensure_mariadb() {
  if ! command -v mariadb >/dev/null 2>&1 || [ ! -x /usr/sbin/mariadbd ]; then
    echo "[mariadb] installing mariadb-server"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq mariadb-server >/dev/null
  fi
  if ! mariadb -h127.0.0.1 -P3306 -uroot -e 'SELECT 1' >/dev/null 2>&1; then
    echo "[mariadb] starting the server"
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    for _ in $(seq 1 60); do
      mariadb -h127.0.0.1 -P3306 -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
      sleep 1
    done
  fi
  mariadb -h127.0.0.1 -P3306 -uroot -e 'CREATE DATABASE IF NOT EXISTS test' \
    || { echo "[mariadb] the server at 127.0.0.1:3306 does not accept connections" >&2; return 1; }
}
