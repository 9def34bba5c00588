#!/usr/bin/env bash
# The Debian packages, end to end: build `ardacat` (server + CLI) and `ardacat-client` with
# cargo-deb (a release build), check their contents, install `ardacat` with `dpkg -i`, run the
# packaged server as the packaged system user on a temporary database and smoke-test it with the
# packaged CLI, verify the systemd unit with `systemd-analyze verify`, then purge it; the same for
# `ardacat-client`. Needs root (dpkg). Any failure stops the script with a message and a non-zero
# exit; the trap removes what the script installed. It refuses to run where an ardacat package is
# already installed (it would remove it).
#
# Without systemd as PID 1 (containers) the unit is verified but not started; with it, the
# installed service is started by the package and smoke-tested as well.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

step() { echo "== package.sh: $*"; }
die() {
    echo "package.sh: FAILED: $*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || die "run as root: it installs packages and creates a system user"
for p in ardacat ardacat-client; do
    state=$(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null || true)
    if [ -n "$state" ] && [ "$state" != not-installed ]; then
        die "package $p is on this machine ($state); this script installs and purges its own copy"
    fi
done

# dpkg, waiting (up to 10 minutes) while another apt or dpkg holds its lock instead of failing.
dpkg_wait() {
    local out
    for _ in $(seq 1 120); do
        if out=$(dpkg "$@" 2>&1); then
            echo "$out"
            return 0
        fi
        grep -q 'locked by another process' <<<"$out" || {
            echo "$out" >&2
            return 1
        }
        sleep 5
    done
    echo "$out" >&2
    return 1
}

# What this run creates, so that the trap removes exactly that.
user_existed=no
getent passwd ardacat >/dev/null && user_existed=yes
state_existed=no
[ -e /var/lib/ardacat ] && state_existed=yes
default_existed=no
[ -e /etc/default/ardacat ] && default_existed=yes
installed=()
server_pid=
work=$(mktemp -d)
chmod 0755 "$work"

cleanup() {
    local rc=$?
    set +e
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -KILL "$server_pid"
        wait "$server_pid" 2>/dev/null
    fi
    for p in "${installed[@]}"; do
        if dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null | grep -qv not-installed; then
            dpkg_wait --purge "$p" >/dev/null || echo "package.sh: could not purge $p" >&2
        fi
    done
    [ "$default_existed" = no ] && rm -f /etc/default/ardacat
    [ "$state_existed" = no ] && rm -rf /var/lib/ardacat
    if [ "$user_existed" = no ] && getent passwd ardacat >/dev/null; then
        deluser --quiet --system ardacat >/dev/null 2>&1 || echo "package.sh: could not remove user ardacat" >&2
    fi
    if [ $rc -ne 0 ] && [ -f "$work/server.err" ]; then
        echo "--- server stderr:" >&2
        cat "$work/server.err" >&2
    fi
    rm -rf "$work"
    exit $rc
}
trap cleanup EXIT

# Tools: cargo-deb from crates.io; binutils, dpkg-dev (dpkg-shlibdeps computes the library dependencies),
# adduser (a dependency of the package) and systemd (systemd-analyze) from Debian.
need_deb() {
    local cmd=$1 pkg=$2
    if ! command -v "$cmd" >/dev/null; then
        step "installing $pkg (for $cmd)"
        apt-get -o DPkg::Lock::Timeout=600 update -qq || die "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$pkg" \
            || die "cannot install $pkg"
    fi
}
need_deb dpkg-shlibdeps dpkg-dev
need_deb adduser adduser
need_deb systemd-analyze systemd
need_deb objcopy binutils  # splits the debug symbols off (cargo deb --dbgsym); readelf
if ! cargo deb --version >/dev/null 2>&1; then
    step "installing cargo-deb"
    cargo install cargo-deb --locked || die "cannot install cargo-deb"
fi

step "building the packages (release build)"
mkdir -p target/debian
# cargo deb prints the paths it wrote: the .deb, and the -dbgsym .ddeb with the debug symbols.
# --fast: lighter compression; this run tests the package, it does not publish it.
server_out=$(cargo deb --locked --fast -p ardacat-server --output target/debian/) || die "cargo deb -p ardacat-server"
# The server package's build made target/release/ardacat already.
client_out=$(cargo deb --locked --fast -p ardacat-client --no-build --output target/debian/) || die "cargo deb -p ardacat-client"
echo "$server_out"
echo "$client_out"
server_deb=$(grep '\.deb$' <<<"$server_out" | head -1)
client_deb=$(grep '\.deb$' <<<"$client_out" | head -1)
[ -f "$server_deb" ] || die "cargo deb did not print the package path: $server_deb"
[ -f "$client_deb" ] || die "cargo deb did not print the package path: $client_deb"
grep -q 'dbgsym.*\.ddeb$' <<<"$server_out" || die "no -dbgsym package: $server_out"

step "checking the package contents"
contents=$(dpkg-deb --contents "$server_deb")
for f in ./usr/bin/ardacat-server ./usr/bin/ardacat ./etc/ardacat/ardacat.toml \
    ./usr/lib/systemd/system/ardacat.service ./usr/share/doc/ardacat/operations.md; do
    grep -q " $f\$" <<<"$contents" || die "$server_deb lacks $f"
done
dpkg-deb --ctrl-tarfile "$server_deb" | tar -xO ./conffiles | grep -qx /etc/ardacat/ardacat.toml \
    || die "/etc/ardacat/ardacat.toml is not a conffile"
dpkg-deb --field "$server_deb" Depends | grep -q adduser || die "the package does not depend on adduser"
mkdir "$work/unpacked"
dpkg-deb --extract "$server_deb" "$work/unpacked"
if readelf -S "$work/unpacked/usr/bin/ardacat-server" | grep -q '\.debug_line'; then
    die "/usr/bin/ardacat-server is not stripped (its symbols belong in the -dbgsym package)"
fi
dpkg-deb --contents "$client_deb" | grep -q ' ./usr/bin/ardacat$' || die "$client_deb lacks /usr/bin/ardacat"

if [ -d /run/systemd/system ]; then
    # The package starts the service: give root a known password for the smoke test below.
    [ "$default_existed" = no ] || die "/etc/default/ardacat exists; not overwriting it"
    echo "ARDACAT_ROOT_PASSWORD=package-smoke-$$" >/etc/default/ardacat
fi

step "dpkg -i $server_deb"
installed+=(ardacat)
dpkg_wait -i "$server_deb" || die "dpkg -i $server_deb"

step "checking the installation"
entry=$(getent passwd ardacat) || die "no user ardacat"
uid=$(cut -d: -f3 <<<"$entry")
[ "$uid" -lt 1000 ] || die "ardacat is not a system user (uid $uid)"
case "$(cut -d: -f7 <<<"$entry")" in
*nologin | /bin/false) ;;
*) die "ardacat has a login shell: $entry" ;;
esac
[ "$(stat -c '%U:%G %a' /etc/ardacat/ardacat.toml)" = "root:ardacat 640" ] \
    || die "/etc/ardacat/ardacat.toml: $(stat -c '%U:%G %a' /etc/ardacat/ardacat.toml), expected root:ardacat 640"
[ "$(stat -c '%U' /var/lib/ardacat)" = ardacat ] || die "/var/lib/ardacat is not owned by ardacat"
as_ardacat() { setpriv --reuid=ardacat --regid=ardacat --init-groups --no-new-privs "$@"; }
as_ardacat /usr/bin/ardacat-server --check-config /etc/ardacat/ardacat.toml \
    || die "the installed config does not check"

step "systemd-analyze verify"
unit=/usr/lib/systemd/system/ardacat.service
verify_out=$(systemd-analyze verify "$unit" 2>&1) || {
    echo "$verify_out" >&2
    die "systemd-analyze verify $unit"
}
# It reports problems of other units of the machine too; any line about ours is a failure.
if grep -i ardacat <<<"$verify_out"; then
    die "systemd-analyze verify complains about $unit"
fi
systemd-analyze security --offline=yes "$unit" 2>/dev/null | tail -1 || true

step "smoke test: the packaged server as user ardacat, the packaged CLI"
password=smoke-$$-$RANDOM
install -d -o ardacat -g ardacat -m 0700 "$work/db"
: >"$work/mdclient.config"
# setpriv itself (not the function) so that $! is the server's PID: setpriv and env exec it.
setpriv --reuid=ardacat --regid=ardacat --init-groups --no-new-privs \
    env -i ARDACAT_ROOT_PASSWORD="$password" RUST_LOG=warn /usr/bin/ardacat-server --config /etc/ardacat/ardacat.toml --database "sqlite:$work/db/cat.db" \
    --tcp-port 0 --http-port 0 >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
for _ in $(seq 1 300); do
    grep -q listening "$work/server.out" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || die "the server exited at start"
    sleep 0.1
done
banner=$(head -1 "$work/server.out")
tcp=$(grep -o 'tcp=[^ ]*' <<<"$banner" | cut -d= -f2)
http=$(grep -o 'http=[^ ]*' <<<"$banner" | cut -d= -f2)
if [ -z "$tcp" ] || [ -z "$http" ]; then die "no listening line from the server: $banner"; fi
[ "$(stat -c %U "$work/db/cat.db")" = ardacat ] || die "the database is not the ardacat user's"
cli() { ARDACAT_PASSWORD="$password" /usr/bin/ardacat --config "$work/mdclient.config" --no-ssl --host 127.0.0.1 --port "${tcp##*:}" --login root "$@"; }
[ "$(cli -c pwd)" = / ] || die "ardacat -c pwd did not answer /"
cli -c 'createdir /smoke' -c 'addattr /smoke n int' -c 'addentry /smoke/e1 n 7' >/dev/null \
    || die "writes through the CLI failed"
[ "$(cli -c 'getattr /smoke n')" = "$(printf 'e1\n7')" ] || die "getattr /smoke n: $(cli -c 'getattr /smoke n')"
metrics=$(curl -fsS "http://$http/metrics") || die "GET /metrics failed"
grep -q '^ardacat_' <<<"$metrics" || die "no ardacat_ samples on /metrics"
wsdl=$(curl -fsS "http://$http/soap?wsdl") || die "GET /soap?wsdl failed"
grep -q 'definitions' <<<"$wsdl" || die "no WSDL on /soap?wsdl"
kill -TERM "$server_pid"
wait "$server_pid" || die "the server did not stop cleanly on SIGTERM (exit $?)"
server_pid=

if [ -d /run/systemd/system ]; then
    step "the installed service (systemd is running)"
    for _ in $(seq 1 100); do
        systemctl is-active --quiet ardacat && break
        sleep 0.1
    done
    systemctl is-active --quiet ardacat || {
        journalctl -u ardacat --no-pager -n 50 >&2
        die "the ardacat service is not running"
    }
    for _ in $(seq 1 100); do
        ARDACAT_PASSWORD="package-smoke-$$" /usr/bin/ardacat --no-ssl --host 127.0.0.1 --port 8822 --login root -c pwd \
            >/dev/null 2>&1 && break
        sleep 0.1
    done
    [ "$(ARDACAT_PASSWORD="package-smoke-$$" /usr/bin/ardacat --no-ssl --host 127.0.0.1 --port 8822 --login root -c pwd)" = / ] \
        || die "the service does not answer on 8822"
    [ -f /var/lib/ardacat/ardacat.db ] || die "the service's database is not in /var/lib/ardacat"
fi

step "reinstall over a locally edited config"
echo "# local edit kept by dpkg" >>/etc/ardacat/ardacat.toml
dpkg_wait -i "$server_deb" || die "dpkg -i $server_deb (reinstall)"
grep -q '^# local edit kept by dpkg$' /etc/ardacat/ardacat.toml || die "the reinstall overwrote the edited config"
[ "$(stat -c '%U:%G %a' /etc/ardacat/ardacat.toml)" = "root:ardacat 640" ] || die "the reinstall changed the config's permissions"
[ "$(getent passwd ardacat | cut -d: -f3)" = "$uid" ] || die "the reinstall changed the ardacat user"

step "dpkg --purge ardacat"
dpkg_wait --purge ardacat || die "dpkg --purge ardacat"
installed=()
[ ! -e /usr/bin/ardacat-server ] || die "/usr/bin/ardacat-server left behind"
[ ! -e /etc/ardacat/ardacat.toml ] || die "/etc/ardacat/ardacat.toml left behind by purge"
[ ! -e "$unit" ] || die "$unit left behind"

step "dpkg -i $client_deb"
installed+=(ardacat-client)
dpkg_wait -i "$client_deb" || die "dpkg -i $client_deb"
/usr/bin/ardacat --version | grep -q '^ardacat ' || die "the client package's ardacat does not run"
dpkg_wait --purge ardacat-client || die "dpkg --purge ardacat-client"
installed=()

step "OK"
