#!/usr/bin/env bash
# Side-by-side DNS benchmark: Meridian vs Knot DNS vs PowerDNS Authoritative,
# plus CoreDNS with the meridian plugin against the same CoreDNS with a
# trivial plugin that returns a fixed A record (the plugin's own overhead),
# plus Meridian with the benchmark zone DNSSEC-signed, queried with the DO bit
# (what online signing costs against the unsigned Meridian).
#
# One invocation starts the servers on loopback ports (each pinned to the
# same CPU, with the same number of workers), checks that each of them
# answers the benchmark names, then runs dnsperf against each in turn with
# the same query file and the same settings, and prints a markdown table
# (also written to bench/results/latest.md). See bench/README.md.
#
# Environment (all optional):
#   BENCH_SECONDS=10        measured dnsperf run per server (seconds)
#   BENCH_WARMUP=2          unmeasured dnsperf run before each measurement
#   BENCH_ROUNDS=1          measure every server this many times, interleaved;
#                           the table shows each server's median-QPS round
#   BENCH_QUERIES=mix       mix: 80% w (weighted) + 20% g (geo); weighted: w only;
#                           names: BENCH_NAMES distinct weighted names n0..nN-1
#                           (Meridian: generated services; Knot: the same names
#                           as static records), queried in a shuffled order
#   BENCH_NAMES=10000       distinct names of BENCH_QUERIES=names (1..100000)
#   BENCH_SERVERS="meridian meridian-signed knot pdns coredns-meridian coredns-fixed"
#                           which servers to run, in this order (names: "meridian knot",
#                           the only two it runs)
#   BENCH_CLIENTS=8  BENCH_OUTSTANDING=100  BENCH_TIMEOUT=5   dnsperf -c / -q / -t
#   BENCH_CLIENT_CPU=0  BENCH_SERVER_CPU=1   taskset CPU lists
#   MERIDIAN_BIN=./bin/meridian   (built from ./cmd/meridian when left unset)
#   COREDNS_MERIDIAN_BIN=./bin/coredns-meridian   (built from ./cmd/coredns-meridian when unset)
#   COREDNS_FIXED_BIN=./bin/coredns-fixed         (built from ./bench/corednsfixed when unset)
#   KNOT_PORT=5392  PDNS_PORT=5393  (Meridian's port is read from bench/meridian.yaml)
#   COREDNS_MERIDIAN_PORT=5394  COREDNS_FIXED_PORT=5395  MERIDIAN_SIGNED_PORT=5396
#   BENCH_OVERHEAD_MIN=0.90 target of coredns-meridian / coredns-fixed QPS
#   BENCH_IDLE_WAIT=60      wait up to this many seconds for the two CPUs to be
#                           quiet (< BENCH_NOISE_MAX % busy) before measuring
#   BENCH_NOISE_MAX=15      other load (%) on a benchmark CPU that flags a run
#   BENCH_KEEP_TMP=1        keep the temporary directory (configs, logs)
#   BENCH_PROFILE=1         also take a CPU profile of each CoreDNS server over
#                           every measured run (its pprof plugin on port+1000),
#                           into bench/results/cpu-<server>-<round>.pprof
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
export LC_ALL=C

BENCH_SECONDS=${BENCH_SECONDS:-10}
BENCH_WARMUP=${BENCH_WARMUP:-2}
BENCH_ROUNDS=${BENCH_ROUNDS:-1}
BENCH_QUERIES=${BENCH_QUERIES:-mix}
BENCH_NAMES=${BENCH_NAMES:-10000}
ALL_SERVERS="meridian meridian-signed knot pdns coredns-meridian coredns-fixed"
NAMES_SERVERS="meridian knot"
if [[ $BENCH_QUERIES == names ]]; then
	BENCH_SERVERS=${BENCH_SERVERS:-$NAMES_SERVERS}
else
	BENCH_SERVERS=${BENCH_SERVERS:-$ALL_SERVERS}
fi
BENCH_CLIENTS=${BENCH_CLIENTS:-8}
BENCH_OUTSTANDING=${BENCH_OUTSTANDING:-100}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-5}
BENCH_IDLE_WAIT=${BENCH_IDLE_WAIT:-60}
BENCH_NOISE_MAX=${BENCH_NOISE_MAX:-15}
KNOT_PORT=${KNOT_PORT:-5392}
PDNS_PORT=${PDNS_PORT:-5393}
COREDNS_MERIDIAN_PORT=${COREDNS_MERIDIAN_PORT:-5394}
COREDNS_FIXED_PORT=${COREDNS_FIXED_PORT:-5395}
MERIDIAN_SIGNED_PORT=${MERIDIAN_SIGNED_PORT:-5396}
BENCH_OVERHEAD_MIN=${BENCH_OVERHEAD_MIN:-0.90}
BENCH_PROFILE=${BENCH_PROFILE:-0}
MERIDIAN_CONFIG=bench/meridian.yaml
RESULTS_DIR=bench/results
ZONE=bench.meridian.test
W_NAME=w.$ZONE
G_NAME=g.$ZONE
W_ADDRS="192.0.2.1 192.0.2.2"   # weighted 70/30 on Meridian and PowerDNS
G_ADDR=198.51.100.1             # the answer for a 127.0.0.0/8 client
FIXED_ADDR=192.0.2.1            # coredns-fixed's answer to every query (bench/corednsfixed)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench: ERROR: %s\n' "$*" >&2; exit 1; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
for v in BENCH_NAMES BENCH_SECONDS BENCH_WARMUP BENCH_ROUNDS BENCH_CLIENTS BENCH_OUTSTANDING BENCH_TIMEOUT BENCH_IDLE_WAIT BENCH_NOISE_MAX KNOT_PORT PDNS_PORT COREDNS_MERIDIAN_PORT COREDNS_FIXED_PORT MERIDIAN_SIGNED_PORT; do
	is_uint "${!v}" || die "$v must be a non-negative integer (got '${!v}')"
done
((BENCH_SECONDS >= 1)) || die "BENCH_SECONDS must be at least 1"
((BENCH_ROUNDS >= 1)) || die "BENCH_ROUNDS must be at least 1"
case $BENCH_QUERIES in
mix | weighted) ;;
names)
	((BENCH_NAMES >= 1 && BENCH_NAMES <= 100000)) || die "BENCH_NAMES must be in 1..100000 (got '$BENCH_NAMES')"
	for s in $BENCH_SERVERS; do
		[[ " $NAMES_SERVERS " == *" $s "* ]] ||
			die "BENCH_QUERIES=names runs only $NAMES_SERVERS (got '$s' in BENCH_SERVERS)"
	done
	;;
*) die "BENCH_QUERIES must be 'mix' (80% w / 20% g), 'weighted' (w only) or 'names' (BENCH_NAMES distinct names), got '$BENCH_QUERIES'" ;;
esac
[[ $BENCH_PROFILE == [01] ]] || die "BENCH_PROFILE must be 0 or 1 (got '$BENCH_PROFILE')"
[[ $BENCH_OVERHEAD_MIN =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "BENCH_OVERHEAD_MIN must be a number (got '$BENCH_OVERHEAD_MIN')"
declare -A seen_server=()
for s in $BENCH_SERVERS; do
	[[ " $ALL_SERVERS " == *" $s "* ]] || die "unknown server '$s' in BENCH_SERVERS (allowed: $ALL_SERVERS)"
	[[ -z ${seen_server[$s]:-} ]] || die "server '$s' is listed twice in BENCH_SERVERS"
	seen_server[$s]=1
done
[[ -n ${BENCH_SERVERS// /} ]] || die "BENCH_SERVERS is empty"

# ---------------------------------------------------------------- tools ----

# Debian packages the benchmark needs, by the command that tells they are there.
need_pkgs() {
	local pkgs=()
	command -v dnsperf >/dev/null || pkgs+=(dnsperf)
	command -v dig >/dev/null || pkgs+=(dnsutils)
	command -v taskset >/dev/null || pkgs+=(util-linux)
	if ((BENCH_PROFILE)); then command -v curl >/dev/null || pkgs+=(curl); fi
	if [[ " $BENCH_SERVERS " == *" knot "* ]]; then
		command -v knotd >/dev/null || pkgs+=(knot)
	fi
	if [[ " $BENCH_SERVERS " == *" pdns "* ]]; then
		command -v pdns_server >/dev/null || pkgs+=(pdns-server)
		# The bind backend is a module; find it wherever the package put it.
		compgen -G '/usr/lib/*/pdns/libbindbackend.so' >/dev/null ||
			compgen -G '/usr/lib/pdns/libbindbackend.so' >/dev/null ||
			pkgs+=(pdns-backend-bind)
	fi
	echo "${pkgs[@]}"
}

install_pkgs() {
	local missing
	missing=$(need_pkgs)
	[[ -z $missing ]] && return 0
	log "installing missing Debian packages: $missing"
	command -v apt-get >/dev/null || die "missing $missing and no apt-get here; install them by hand"
	local sudo=()
	if ((EUID != 0)); then
		if ! command -v sudo >/dev/null || ! sudo -n true 2>/dev/null; then
			die "missing $missing; run as root or install them: apt-get install $missing"
		fi
		sudo=(sudo -n)
	fi
	# Debian's knot and pdns-server packages try to start their system
	# services (on port 53); that does not disturb the benchmark ports.
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null ||
		die "apt-get update failed"
	# shellcheck disable=SC2086
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends -o Dpkg::Use-Pty=0 $missing >/dev/null ||
		die "apt-get install $missing failed"
	missing=$(need_pkgs)
	[[ -z $missing ]] || die "still missing after apt-get install: $missing"
}

install_pkgs

NCPU=$(nproc)
BENCH_CLIENT_CPU=${BENCH_CLIENT_CPU:-0}
BENCH_SERVER_CPU=${BENCH_SERVER_CPU:-1}
if ((NCPU < 2)); then
	log "WARNING: only $NCPU CPU: dnsperf and the servers share CPU 0; numbers are not meaningful"
	BENCH_CLIENT_CPU=0 BENCH_SERVER_CPU=0
fi
taskset -c "$BENCH_SERVER_CPU" true 2>/dev/null || die "BENCH_SERVER_CPU=$BENCH_SERVER_CPU is not a usable CPU list"
taskset -c "$BENCH_CLIENT_CPU" true 2>/dev/null || die "BENCH_CLIENT_CPU=$BENCH_CLIENT_CPU is not a usable CPU list"

# ------------------------------------------------------------- meridian ----

# meridian-signed is the same binary with a config derived from the same file
# (see "signed config" below).
MERIDIAN_PORT=
if [[ " $BENCH_SERVERS " == *" meridian "* || " $BENCH_SERVERS " == *" meridian-signed "* ]]; then
	[[ -f $MERIDIAN_CONFIG ]] || die "$MERIDIAN_CONFIG not found"
	MERIDIAN_PORT=$(grep -m1 -oE '127\.0\.0\.1:[0-9]+' "$MERIDIAN_CONFIG" | cut -d: -f2 || true)
	[[ -n $MERIDIAN_PORT ]] || die "no 127.0.0.1:PORT listen address in $MERIDIAN_CONFIG"
	if [[ -z ${MERIDIAN_BIN:-} ]]; then
		MERIDIAN_BIN=./bin/meridian
		if [[ -d cmd/meridian ]]; then
			command -v go >/dev/null || die "go is not installed: cannot build ./cmd/meridian (or set MERIDIAN_BIN)"
			log "building ./cmd/meridian -> bin/meridian"
			# Same version stamp as `make build` (ignored by the linker if the variable is gone).
			ver=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
			go build -ldflags "-X github.com/meridian-gslb/meridian/internal/app.Version=$ver" \
				-o bin/meridian ./cmd/meridian || die "go build ./cmd/meridian failed"
		fi
	fi
	[[ -x $MERIDIAN_BIN ]] || die "Meridian binary $MERIDIAN_BIN not found or not executable
       (build it with 'go build -o bin/meridian ./cmd/meridian', set MERIDIAN_BIN,
       or run the peers only with BENCH_SERVERS='knot pdns')"
	log "checking $MERIDIAN_CONFIG"
	"$MERIDIAN_BIN" check-config "$MERIDIAN_CONFIG" >&2 ||
		die "'$MERIDIAN_BIN check-config $MERIDIAN_CONFIG' failed"
fi

# -------------------------------------------------------------- coredns ----

# coredns-meridian is CoreDNS with the meridian plugin (cmd/coredns-meridian);
# coredns-fixed is the same CoreDNS, same plugin set, with the trivial plugin
# `fixed` in meridian's place (bench/corednsfixed). Their QPS ratio is what
# the meridian plugin itself costs inside CoreDNS.
#
# A binary whose variable is unset is built with `go build`, with the same
# version stamp as `make build` / `make coredns`: Go's build cache makes that
# a second or two when nothing changed (the first CoreDNS build takes a minute
# or two).
build_coredns() { # $1 = variable naming the binary, $2 = default path, $3 = package
	local var=$1 def=$2 pkg=$3 ver
	if [[ -z ${!var:-} ]]; then
		printf -v "$var" '%s' "$def"
		if [[ -d $pkg ]]; then
			command -v go >/dev/null || die "go is not installed: cannot build $pkg (or set $var)"
			log "building $pkg -> $def (go build; cached after the first build)"
			ver=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
			go build -ldflags "-X github.com/meridian-gslb/meridian/internal/app.Version=$ver" \
				-o "$def" "$pkg" || die "go build $pkg failed"
		fi
	fi
	[[ -x ${!var} ]] || die "CoreDNS binary ${!var} not found or not executable
       (build it with 'go build -o $def $pkg', set $var,
       or leave it out of BENCH_SERVERS)"
}
if [[ " $BENCH_SERVERS " == *" coredns-meridian "* ]]; then
	[[ -f $MERIDIAN_CONFIG ]] || die "$MERIDIAN_CONFIG not found"
	build_coredns COREDNS_MERIDIAN_BIN ./bin/coredns-meridian ./cmd/coredns-meridian
fi
if [[ " $BENCH_SERVERS " == *" coredns-fixed "* ]]; then
	build_coredns COREDNS_FIXED_BIN ./bin/coredns-fixed ./bench/corednsfixed
fi

port_of() {
	case $1 in
	meridian) echo "$MERIDIAN_PORT" ;;
	meridian-signed) echo "$MERIDIAN_SIGNED_PORT" ;;
	knot) echo "$KNOT_PORT" ;;
	pdns) echo "$PDNS_PORT" ;;
	coredns-meridian) echo "$COREDNS_MERIDIAN_PORT" ;;
	coredns-fixed) echo "$COREDNS_FIXED_PORT" ;;
	esac
}
label_of() {
	case $1 in
	meridian) echo Meridian ;;
	meridian-signed) echo "Meridian (DNSSEC, DO=1)" ;;
	knot) echo "Knot DNS" ;;
	pdns) echo "PowerDNS Auth" ;;
	coredns-meridian) echo "CoreDNS + meridian" ;;
	coredns-fixed) echo "CoreDNS + fixed" ;;
	esac
}
# CoreDNS servers only: where their pprof plugin listens with BENCH_PROFILE=1.
is_coredns() { [[ $1 == coredns-* ]]; }
pprof_port_of() { echo $(($(port_of "$1") + 1000)); }
# What each server must answer for g (coredns-fixed answers everything alike).
g_addr_of() { if [[ $1 == coredns-fixed ]]; then echo "$FIXED_ADDR"; else echo "$G_ADDR"; fi; }

# Refuse to start when something already answers on a benchmark port:
# its answers would be measured instead of ours.
declare -A seen_port=()
for s in $BENCH_SERVERS; do
	p=$(port_of "$s")
	[[ -z ${seen_port[$p]:-} ]] || die "$s and ${seen_port[$p]} would both use port $p"
	seen_port[$p]=$s
	if dig +time=1 +tries=1 @127.0.0.1 -p "$p" "$ZONE" SOA >/dev/null 2>&1; then
		die "something already answers DNS on 127.0.0.1:$p (needed for $s); stop it or choose another port"
	fi
done

# ------------------------------------------------------- temp dir, trap ----

TMP=$(mktemp -d "${TMPDIR:-/tmp}/meridian-bench.XXXXXX")
declare -A PID=()

stop_servers() {
	local s pid i
	for s in "${!PID[@]}"; do
		pid=${PID[$s]}
		kill -TERM "$pid" 2>/dev/null || true
	done
	for s in "${!PID[@]}"; do
		pid=${PID[$s]}
		for ((i = 0; i < 50; i++)); do # at most 5 s each
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			log "$s (pid $pid) did not stop on SIGTERM; sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
		unset "PID[$s]"
	done
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	stop_servers
	if [[ ${BENCH_KEEP_TMP:-0} == 1 ]]; then
		log "kept temporary files in $TMP"
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# -------------------------------------------------------- signed config ----

# meridian-signed serves bench/meridian.yaml with two changes: its own listen
# port, and the benchmark zone signed online with a fresh ECDSA P-256 key
# (`meridian dnssec keygen`, written into $TMP). Everything else, rrl
# included, is the same file, so signing is the only difference.
MERIDIAN_SIGNED_CONFIG=$TMP/meridian-signed.yaml
if [[ " $BENCH_SERVERS " == *" meridian-signed "* ]]; then
	mkdir -p "$TMP/dnssec"
	"$MERIDIAN_BIN" dnssec keygen --zone "$ZONE" --algorithm ecdsap256 --out "$TMP/dnssec" \
		>"$TMP/keygen.log" 2>&1 || {
		cat "$TMP/keygen.log" >&2
		die "'meridian dnssec keygen --zone $ZONE' failed (output above)"
	}
	keys=("$TMP"/dnssec/K*.private)
	[[ ${#keys[@]} == 1 && -f ${keys[0]} ]] || die "keygen did not write exactly one .private file into $TMP/dnssec"
	# Replace the first 127.0.0.1:PORT (the listen address run.sh reads for
	# meridian) and add the dnssec block under the zone's `- apex: ZONE` line,
	# indented like the zone's other keys; fail unless both happened once.
	awk -v port="$MERIDIAN_SIGNED_PORT" -v zone="$ZONE" -v key="${keys[0]}" '
		!l && /127\.0\.0\.1:[0-9]+/ { sub(/127\.0\.0\.1:[0-9]+/, "127.0.0.1:" port); l = 1 }
		{ print }
		match($0, /^ *- +apex: */) {
			rest = substr($0, RLENGTH + 1)
			sub(/[ \t]*(#.*)?$/, "", rest)
			gsub(/["\047]/, "", rest)
			if (rest == zone || rest == zone ".") {
				ind = $0; sub(/-.*/, "", ind); ind = ind "  "
				print ind "dnssec:"
				print ind "  key_files: [\"" key "\"]"
				z++
			}
		}
		END { exit !(l && z == 1) }' "$MERIDIAN_CONFIG" >"$MERIDIAN_SIGNED_CONFIG" ||
		die "could not derive $MERIDIAN_SIGNED_CONFIG from $MERIDIAN_CONFIG (needs one 127.0.0.1:PORT listen address and one '- apex: $ZONE' zone)"
	log "checking the signed config (bench zone signed with ${keys[0]##*/})"
	"$MERIDIAN_BIN" check-config "$MERIDIAN_SIGNED_CONFIG" >&2 ||
		die "'$MERIDIAN_BIN check-config $MERIDIAN_SIGNED_CONFIG' failed"
fi

# ------------------------------------------------------- many names ----

# BENCH_QUERIES=names: BENCH_NAMES weighted services n0..nN-1 added to
# bench/meridian.yaml (whose services list is its last section), the same
# names as static records in Knot's zone (both addresses, as for w), and a
# query file over all of them in a shuffled order (fixed seed).
N_PREFIX=n
if [[ $BENCH_QUERIES == names && " $BENCH_SERVERS " == *" meridian "* ]]; then
	NAMES_CONFIG=$TMP/meridian-names.yaml
	[[ $(tail -c1 "$MERIDIAN_CONFIG" | wc -l) == 1 ]] || die "$MERIDIAN_CONFIG must end with a newline"
	[[ $(grep -c '^services:' "$MERIDIAN_CONFIG") == 1 && -z $(sed -n '/^services:/,$p' "$MERIDIAN_CONFIG" | sed 1d | grep -E '^[^ #]') ]] ||
		die "$MERIDIAN_CONFIG must end with its services: list (BENCH_QUERIES=names appends to it)"
	{
		cat "$MERIDIAN_CONFIG"
		awk -v n="$BENCH_NAMES" -v p="$N_PREFIX" -v z="$ZONE" 'BEGIN {
			for (i = 0; i < n; i++)
				printf "  - {name: %s%d.%s, strategy: weighted, ttl: 30, endpoints: [{address: 192.0.2.1, cluster: local, weight: 700}, {address: 192.0.2.2, cluster: far, weight: 300}]}\n", p, i, z
		}'
	} >"$NAMES_CONFIG"
	log "checking the $BENCH_NAMES-name config"
	"$MERIDIAN_BIN" check-config "$NAMES_CONFIG" >&2 || die "'$MERIDIAN_BIN check-config $NAMES_CONFIG' failed"
	MERIDIAN_CONFIG=$NAMES_CONFIG
fi

# ----------------------------------------------------- zone and queries ----

# The static zone Knot serves; PowerDNS serves the same with w as a LUA record.
write_zone() { # $1 = file, $2 = "static" | "lua"
	{
		cat <<EOF
\$ORIGIN $ZONE.
\$TTL 30
@    3600 IN SOA ns1.$ZONE. hostmaster.$ZONE. 1 3600 600 1209600 30
@    3600 IN NS  ns1.$ZONE.
ns1  3600 IN A   127.0.0.1
g         IN A   $G_ADDR
EOF
		if [[ $2 == lua ]]; then
			echo "w         IN LUA A \"pickwrandom({{70,'192.0.2.1'},{30,'192.0.2.2'}})\""
		else
			echo "w         IN A   192.0.2.1"
			echo "w         IN A   192.0.2.2"
		fi
		if [[ $BENCH_QUERIES == names ]]; then
			awk -v n="$BENCH_NAMES" -v p="$N_PREFIX" 'BEGIN {
				for (i = 0; i < n; i++) printf "%s%d IN A 192.0.2.1\n%s%d IN A 192.0.2.2\n", p, i, p, i
			}'
		fi
	} >"$1"
}

QUERIES=$TMP/queries.txt
if [[ $BENCH_QUERIES == names ]]; then
	# Every name once, shuffled (Fisher-Yates, fixed seed); dnsperf loops.
	awk -v n="$BENCH_NAMES" -v p="$N_PREFIX" -v z="$ZONE" 'BEGIN {
		srand(1)
		for (i = 0; i < n; i++) a[i] = i
		for (i = n - 1; i > 0; i--) { j = int(rand() * (i + 1)); t = a[i]; a[i] = a[j]; a[j] = t }
		for (i = 0; i < n; i++) printf "%s%d.%s A\n", p, a[i], z
	}' >"$QUERIES"
else
	# 1000 lines; dnsperf loops over the file. In the mix every fifth query is g.
	awk -v mode="$BENCH_QUERIES" -v w="$W_NAME" -v g="$G_NAME" 'BEGIN {
		for (i = 1; i <= 1000; i++)
			print ((mode == "mix" && i % 5 == 0) ? g : w) " A"
	}' >"$QUERIES"
fi

# ------------------------------------------------------ server starters ----

start_meridian() {
	taskset -c "$BENCH_SERVER_CPU" "$MERIDIAN_BIN" serve --config "$MERIDIAN_CONFIG" \
		>"$TMP/meridian.log" 2>&1 &
	PID[meridian]=$!
}

start_meridian_signed() {
	taskset -c "$BENCH_SERVER_CPU" "$MERIDIAN_BIN" serve --config "$MERIDIAN_SIGNED_CONFIG" \
		>"$TMP/meridian-signed.log" 2>&1 &
	PID[meridian-signed]=$!
}

start_knot() {
	local d=$TMP/knot
	mkdir -p "$d"
	write_zone "$d/$ZONE.zone" static
	cat >"$d/knot.conf" <<EOF
server:
    rundir: "$d"
    listen: 127.0.0.1@$KNOT_PORT
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
control:
    listen: "$d/knot.sock"
database:
    storage: "$d"
log:
  - target: stderr
    any: warning
template:
  - id: default
    storage: "$d"
    semantic-checks: off
    journal-content: none
    zonefile-sync: -1
zone:
  - domain: $ZONE
    file: "$d/$ZONE.zone"
EOF
	taskset -c "$BENCH_SERVER_CPU" knotd -c "$d/knot.conf" >"$TMP/knot.log" 2>&1 &
	PID[knot]=$!
}

start_pdns() {
	local d=$TMP/pdns
	mkdir -p "$d"
	write_zone "$d/$ZONE.zone" lua
	cat >"$d/named.conf" <<EOF
options { directory "$d"; };
zone "$ZONE" { type master; file "$d/$ZONE.zone"; };
EOF
	# receiver-threads=1 and distributor-threads=1 are the minimum; the
	# packet cache stays on (default), as in production. LUA answers are not
	# packet-cached, so every w query runs pickwrandom.
	cat >"$d/pdns.conf" <<EOF
launch=bind
bind-config=$d/named.conf
enable-lua-records=shared
receiver-threads=1
distributor-threads=1
webserver=no
api=no
security-poll-suffix=
loglevel=4
EOF
	taskset -c "$BENCH_SERVER_CPU" pdns_server --config-dir="$d" --socket-dir="$d" \
		--local-address=127.0.0.1 --local-port="$PDNS_PORT" \
		--daemon=no --guardian=no --disable-syslog --write-pid=no \
		>"$TMP/pdns.log" 2>&1 &
	PID[pdns]=$!
}

# CoreDNS: one server block for the benchmark zone, only the answering plugin
# (bind is set-up only, it is not in the query path): no log, cache, errors or
# prometheus, so the two CoreDNS servers differ in that plugin alone. One UDP
# socket (CoreDNS's default without multisocket); GOMAXPROCS follows the
# one-CPU affinity, as for Meridian. BENCH_PROFILE=1 adds pprof, which serves
# HTTP on its own port and is not in the query path either.
start_coredns() { # $1 = server, $2 = binary, $3 = plugin block
	local s=$1 bin=$2 d=$TMP/$1 pp=""
	mkdir -p "$d"
	((BENCH_PROFILE)) && pp="    pprof 127.0.0.1:$(pprof_port_of "$s")"
	cat >"$d/Corefile" <<EOF
$ZONE:$(port_of "$s") {
    bind 127.0.0.1
$pp
$3
}
EOF
	taskset -c "$BENCH_SERVER_CPU" "$bin" -conf "$d/Corefile" >"$TMP/$s.log" 2>&1 &
	PID[$s]=$!
}

# The meridian plugin reads the server's YAML and ignores its server section
# (Meridian's own listen address, sockets, HTTP and log settings).
start_coredns_meridian() {
	start_coredns coredns-meridian "$COREDNS_MERIDIAN_BIN" "    meridian {
        config $ROOT/$MERIDIAN_CONFIG
    }"
}

start_coredns_fixed() {
	start_coredns coredns-fixed "$COREDNS_FIXED_BIN" "    fixed"
}

# Wait (at most 15 s) until the server answers the zone's SOA.
wait_ready() { # $1 = server
	local s=$1 p i
	p=$(port_of "$s")
	for ((i = 0; i < 75; i++)); do
		if ! kill -0 "${PID[$s]}" 2>/dev/null; then
			tail -n 20 "$TMP/$s.log" >&2 || true
			die "$(label_of "$s") exited during start-up (log above)"
		fi
		if dig +time=1 +tries=1 +short @127.0.0.1 -p "$p" "$ZONE" SOA 2>/dev/null | grep -q .; then
			return 0
		fi
		sleep 0.2
	done
	tail -n 20 "$TMP/$s.log" >&2 || true
	die "$(label_of "$s") did not answer on 127.0.0.1:$p within 15 s (log above)"
}

# ---------------------------------------------------------- sanity check ----

declare -A SPLIT=()

# The answer of server $1 on port $2 for $3 A must be one or both of W_ADDRS.
check_w_answer() { # $1 = server, $2 = port, $3 = name
	local out a
	out=$(dig +short +time=2 +tries=2 @127.0.0.1 -p "$2" "$3" A 2>&1) || true
	[[ -n $out ]] || die "sanity: $(label_of "$1") gave no answer for $3 A on port $2"
	while read -r a; do
		[[ " $W_ADDRS " == *" $a "* ]] ||
			die "sanity: $(label_of "$1") answered '$a' for $3 A on port $2 (expected one of $W_ADDRS)"
	done <<<"$out"
}

sanity() { # $1 = server
	local s=$1 p out q="" i n1 n2 total g
	p=$(port_of "$s")
	g=$(g_addr_of "$s")
	check_w_answer "$s" "$p" "$W_NAME"
	out=$(dig +short +time=2 +tries=2 @127.0.0.1 -p "$p" "$G_NAME" A 2>&1) || true
	[[ $out == "$g" ]] ||
		die "sanity: $(label_of "$s") answered '${out//$'\n'/ }' for $G_NAME A on port $p (expected $g)"
	# The weighted split, from 400 queries in one dig process.
	for ((i = 0; i < 400; i++)); do q+=" $W_NAME A"; done
	# shellcheck disable=SC2086
	out=$(dig +short +time=2 +tries=2 @127.0.0.1 -p "$p" $q 2>/dev/null) || true
	n1=$(grep -cx '192\.0\.2\.1' <<<"$out" || true)
	n2=$(grep -cx '192\.0\.2\.2' <<<"$out" || true)
	total=$((n1 + n2))
	if ((total > 400)); then
		SPLIT[$s]="both addresses in every answer (static RRset)"
	elif ((total > 0)); then
		SPLIT[$s]=$(awk -v a="$n1" -v b="$n2" -v t="$total" 'BEGIN { printf "192.0.2.1 %.1f%% / 192.0.2.2 %.1f%% of %d answers", 100 * a / t, 100 * b / t, t }')
	else
		SPLIT[$s]="no answers"
	fi
	[[ $s != coredns-fixed ]] || SPLIT[$s]+=" (fixed answer, no selection)"
	if [[ $BENCH_QUERIES == names ]]; then
		# The first, a middle and the last of the generated names.
		for i in 0 $((BENCH_NAMES / 2)) $((BENCH_NAMES - 1)); do
			check_w_answer "$s" "$p" "$N_PREFIX$i.$ZONE"
		done
	fi
	log "sanity ok: $(label_of "$s") on port $p; w split: ${SPLIT[$s]}"
	if [[ $s == meridian-signed ]]; then
		# With DO=1 (as dnsperf -D sends) both names must come back signed.
		local name rr
		for name in "$W_NAME" "$G_NAME"; do
			out=$(dig +dnssec +norec +time=2 +tries=2 @127.0.0.1 -p "$p" "$name" A 2>&1) || true
			rr=$(awk -v n="$name." '$1 == n && $3 == "IN" && $4 == "RRSIG" && $5 == "A" { print $4, $5, "alg", $6, "key tag", $11, "signer", $12; exit }' <<<"$out")
			[[ -n $rr ]] || {
				printf '%s\n' "$out" >&2
				die "sanity: $(label_of "$s") returned no RRSIG A for $name A with DO=1 on port $p (dig output above)"
			}
			log "sanity ok: $(label_of "$s"): dig +dnssec $name A -> $rr"
		done
	fi
}

# ---------------------------------------------------------------- start ----

for s in $BENCH_SERVERS; do
	log "starting $(label_of "$s") on 127.0.0.1:$(port_of "$s") (CPU $BENCH_SERVER_CPU)"
	"start_${s//-/_}"
done
for s in $BENCH_SERVERS; do wait_ready "$s"; done

# taskset only sets the CPUs a server starts on: a server may move its own
# threads afterwards. Knot does: it pins UDP worker N to CPU N % (online CPUs),
# which puts its only worker on CPU 0, next to dnsperf. So once the servers
# run, pin every thread of each to the server CPU again, and check it before
# each measurement.
WANT_CPUS=$(taskset -c "$BENCH_SERVER_CPU" sed -nE 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
pin_server() { # $1 = server
	local s=$1 pid=${PID[$1]} t bad=""
	taskset -a -p -c "$BENCH_SERVER_CPU" "$pid" >/dev/null 2>&1 ||
		die "could not pin the threads of $(label_of "$s") (pid $pid) to CPU $BENCH_SERVER_CPU"
	for t in /proc/"$pid"/task/*; do
		[[ $(sed -nE 's/^Cpus_allowed_list:[[:space:]]*//p' "$t/status" 2>/dev/null) == "$WANT_CPUS" ]] ||
			[[ ! -e $t/status ]] || bad+=" ${t##*/}"
	done
	[[ -z $bad ]] || die "threads$bad of $(label_of "$s") are not on CPU $WANT_CPUS after taskset -a -p"
}
for s in $BENCH_SERVERS; do pin_server "$s"; done
for s in $BENCH_SERVERS; do sanity "$s"; done

# --------------------------------------------------------------- measure ----

CLK_TCK=$(getconf CLK_TCK)
# utime+stime of the whole process (all threads), in clock ticks. The fields
# are counted after the ')' that closes the command name.
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# Ticks one CPU spent running tasks (user + nice + system) plus the ticks the
# hypervisor stole from it, from /proc/stat; nothing when $1 is a list or a
# range (then the disturbance check is skipped). Interrupt and softirq time is
# left out: that is mostly the benchmark's own packet work.
cpu_busy() {
	[[ $1 =~ ^[0-9]+$ ]] || return 0
	awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $9 }' /proc/stat
}
# Nanoseconds the threads of process $1 have run, by the scheduler's own
# clock (/proc/PID/task/*/schedstat, first field): exact, where utime+stime
# are counted in samples at each timer tick (this kernel: tick accounting),
# which can over- or under-charge a process that runs in short bursts.
sched_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ n += $1 } END { printf "%.0f\n", n }'; }
# Ticks CPU $1 was idle (idle + iowait, from /proc/stat; with NO_HZ these
# come from the idle clock, not from tick samples) and stolen by the
# hypervisor; nothing when $1 is not one CPU.
cpu_idle() {
	[[ $1 =~ ^[0-9]+$ ]] || return 0
	awk -v c="cpu$1" '$1 == c { print $5 + $6 + $9 }' /proc/stat
}
# The kernel thread that runs deferred packet work (softirqs) on CPU $1: its
# time is the benchmark's, not a disturbance.
ksoftirqd_pid() {
	local f
	[[ $1 =~ ^[0-9]+$ ]] || return 0
	for f in /proc/[0-9]*/comm; do
		if [[ $(<"$f") == "ksoftirqd/$1" ]] 2>/dev/null; then
			f=${f#/proc/}
			echo "${f%/comm}"
			return 0
		fi
	done 2>/dev/null
}
# CPU ticks of this shell's finished children (so of every dnsperf run),
# from `times` output saved by the caller: `times` must run in this shell,
# not in the $(...) subshell that reads it.
child_ticks() {
	awk -v hz="$CLK_TCK" 'NR == 2 {
		n = 0
		for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); n += a[1] * 60 + a[2] }
		printf "%.0f\n", n * hz
	}' "$1"
}
# 100 * ticks / (CLK_TCK * seconds), at least 0: percent of one CPU.
pct() { awk -v d="$1" -v hz="$CLK_TCK" -v t="$2" 'BEGIN { o = 100 * d / hz / t; printf "%.0f", (o < 0) ? 0 : o }'; }

DNSPERF_ARGS=(-c "$BENCH_CLIENTS" -T 1 -q "$BENCH_OUTSTANDING" -t "$BENCH_TIMEOUT")
mkdir -p "$RESULTS_DIR"
rm -f "$RESULTS_DIR"/dnsperf-*.txt "$RESULTS_DIR"/cpu-*.pprof

# Results per server and round.
# Server CPU by three rules (see bench/README.md): R_CPU utime+stime of the
# server's threads (tick samples; the table's "server CPU"), R_CPUS their
# scheduler run time, R_CPUK everything the server CPU did (wall time less
# its idle and stolen time: the server, the kernel's packet work there, and
# any other load, which the "other load" column shows).
declare -A R_QPS=() R_LOST=() R_SENT=() R_LAT=() R_CPU=() R_CPUS=() R_CPUK=() R_RCODES=() R_NOISE_S=() R_NOISE_C=()

# Extra dnsperf options per server: the signed Meridian gets the DO bit on
# every query (-D, which implies EDNS), so every answer carries RRSIGs.
dnsperf_extra_of() { [[ $1 == meridian-signed ]] && echo -D; return 0; }

run_dnsperf() { # $1 = server, $2 = seconds, $3 = output file
	local p extra
	p=$(port_of "$1")
	extra=$(dnsperf_extra_of "$1")
	# dnsperf -l stops sending after $2 s, then waits up to -t for replies.
	# shellcheck disable=SC2086 # $extra: zero or more words
	timeout --foreground $(($2 + BENCH_TIMEOUT + 30)) taskset -c "$BENCH_CLIENT_CPU" \
		dnsperf -s 127.0.0.1 -p "$p" -d "$QUERIES" "${DNSPERF_ARGS[@]}" $extra -l "$2" >"$3" 2>&1 ||
		{
			tail -n 20 "$3" >&2
			die "dnsperf against $(label_of "$1") failed (output above)"
		}
}

field() { # $1 = file, $2 = label regex; prints the first number after it
	sed -nE "s/^ *$2 *([0-9.]+).*/\1/p" "$1" | head -n1
}

KSOFT_S=$(ksoftirqd_pid "$BENCH_SERVER_CPU")
KSOFT_C=$(ksoftirqd_pid "$BENCH_CLIENT_CPU")
ksoft_ticks() { if [[ -n $1 && -r /proc/$1/stat ]]; then cpu_ticks "$1"; else echo 0; fi; }

measure() { # $1 = server, $2 = round
	local s=$1 r=$2 out pid runtime t0 t1 b0 b1 c0 c1 k0 k1 ks0 ks1 kc0 kc1 i0 i1 n0 n1 w0 w1
	pid=${PID[$s]}
	kill -0 "$pid" 2>/dev/null || die "$(label_of "$s") is no longer running (see $TMP/$s.log)"
	if ((BENCH_WARMUP > 0)); then
		log "warm-up: $(label_of "$s") ${BENCH_WARMUP}s"
		run_dnsperf "$s" "$BENCH_WARMUP" "$TMP/warmup-$s-$r.txt"
	fi
	pin_server "$s" # again: threads started since then are re-pinned too
	out=$RESULTS_DIR/dnsperf-$s-$r.txt
	log "measuring: $(label_of "$s") ${BENCH_SECONDS}s (round $r)"
	t0=$(cpu_ticks "$pid")
	w0=$(date +%s%N) n0=$(sched_ns "$pid") i0=$(cpu_idle "$BENCH_SERVER_CPU")
	b0=$(cpu_busy "$BENCH_SERVER_CPU") ks0=$(ksoft_ticks "$KSOFT_S")
	c0=$(cpu_busy "$BENCH_CLIENT_CPU") kc0=$(ksoft_ticks "$KSOFT_C")
	times >"$TMP/times0"
	k0=$(child_ticks "$TMP/times0")
	local prof=""
	if ((BENCH_PROFILE)) && is_coredns "$s"; then
		# A CPU profile over the measured run, fetched from CPU 0's side.
		taskset -c "$BENCH_CLIENT_CPU" curl -sf --max-time $((BENCH_SECONDS + 30)) \
			-o "$RESULTS_DIR/cpu-$s-$r.pprof" \
			"http://127.0.0.1:$(pprof_port_of "$s")/debug/pprof/profile?seconds=$BENCH_SECONDS" &
		prof=$!
	fi
	run_dnsperf "$s" "$BENCH_SECONDS" "$out"
	if [[ -n $prof ]]; then
		wait "$prof" || log "WARNING: no CPU profile from $(label_of "$s") (curl failed)"
	fi
	kill -0 "$pid" 2>/dev/null || die "$(label_of "$s") died during the run (see $TMP/$s.log)"
	t1=$(cpu_ticks "$pid")
	w1=$(date +%s%N) n1=$(sched_ns "$pid") i1=$(cpu_idle "$BENCH_SERVER_CPU")
	b1=$(cpu_busy "$BENCH_SERVER_CPU") ks1=$(ksoft_ticks "$KSOFT_S")
	c1=$(cpu_busy "$BENCH_CLIENT_CPU") kc1=$(ksoft_ticks "$KSOFT_C")
	times >"$TMP/times1"
	k1=$(child_ticks "$TMP/times1")
	R_QPS[$s,$r]=$(field "$out" 'Queries per second:')
	R_SENT[$s,$r]=$(field "$out" 'Queries sent:')
	R_LOST[$s,$r]=$(field "$out" 'Queries lost:')
	R_LAT[$s,$r]=$(field "$out" 'Average Latency \(s\):')
	R_RCODES[$s,$r]=$(sed -nE 's/^ *Response codes: *//p' "$out" | head -n1)
	runtime=$(field "$out" 'Run time \(s\):')
	[[ -n ${R_QPS[$s,$r]} && -n ${R_LOST[$s,$r]} && -n ${R_LAT[$s,$r]} && -n $runtime ]] ||
		die "could not read dnsperf results in $out"
	# Server CPU use over the measured run, in % of one CPU.
	R_CPU[$s,$r]=$(pct $((t1 - t0)) "$runtime")
	# By the scheduler's clock, and the server CPU's whole busy time (both
	# over the same window as the ticks, in % of dnsperf's run time).
	R_CPUS[$s,$r]=$(pct "$(((n1 - n0) * CLK_TCK / 1000000000))" "$runtime")
	R_CPUK[$s,$r]=''
	if [[ -n $i0 && -n $i1 ]]; then
		R_CPUK[$s,$r]=$(pct "$(((w1 - w0) * CLK_TCK / 1000000000 - (i1 - i0)))" "$runtime")
	fi
	# What else ran on the two CPUs meanwhile: other processes, kernel
	# threads other than ksoftirqd, and time stolen by the hypervisor. Large
	# values mean the run was disturbed by something else on the machine.
	R_NOISE_S[$s,$r]='' R_NOISE_C[$s,$r]=''
	if [[ -n $b0 && -n $b1 ]]; then
		R_NOISE_S[$s,$r]=$(pct $((b1 - b0 - (t1 - t0) - (ks1 - ks0))) "$runtime")
	fi
	if [[ -n $c0 && -n $c1 ]]; then
		R_NOISE_C[$s,$r]=$(pct $((c1 - c0 - (k1 - k0) - (kc1 - kc0))) "$runtime")
	fi
	log "$(label_of "$s"): ${R_QPS[$s,$r]} qps, lost ${R_LOST[$s,$r]}, server CPU ${R_CPU[$s,$r]}% (scheduler ${R_CPUS[$s,$r]}%, CPU busy ${R_CPUK[$s,$r]:-?}%)," \
		"other load: server CPU ${R_NOISE_S[$s,$r]:-?}%, client CPU ${R_NOISE_C[$s,$r]:-?}%"
}

# Wait (bounded) until nothing else keeps the two benchmark CPUs busy: on a
# shared machine a compile or a test run would be measured with the servers.
QUIET=yes
wait_quiet() {
	local i a0 a1 b0 b1 busy
	for ((i = 0; i < BENCH_IDLE_WAIT || i == 0; i++)); do
		a0=$(cpu_busy "$BENCH_SERVER_CPU") b0=$(cpu_busy "$BENCH_CLIENT_CPU")
		sleep 1
		a1=$(cpu_busy "$BENCH_SERVER_CPU") b1=$(cpu_busy "$BENCH_CLIENT_CPU")
		[[ -n $a0 && -n $b0 ]] || return 0 # CPU lists: cannot tell
		busy=$(((a1 - a0) > (b1 - b0) ? (a1 - a0) : (b1 - b0)))
		busy=$((100 * busy / CLK_TCK))
		((busy < BENCH_NOISE_MAX)) && return 0
		((i == 0)) && log "CPUs $BENCH_SERVER_CPU/$BENCH_CLIENT_CPU are ${busy}% busy with other work; waiting up to ${BENCH_IDLE_WAIT}s for quiet"
	done
	QUIET=no
	log "WARNING: the machine stayed busy (${busy}%); measuring anyway, results will be flagged"
}
wait_quiet

for ((r = 1; r <= BENCH_ROUNDS; r++)); do
	for s in $BENCH_SERVERS; do measure "$s" "$r"; done
done

stop_servers

# ---------------------------------------------------------------- report ----

# The round with the median QPS of each server (the only one when ROUNDS=1).
declare -A BEST=()
for s in $BENCH_SERVERS; do
	BEST[$s]=$(for ((r = 1; r <= BENCH_ROUNDS; r++)); do echo "${R_QPS[$s,$r]} $r"; done |
		sort -g | awk '{ a[NR] = $2 } END { print a[int((NR + 1) / 2)] }')
done

git_version() {
	local v
	v="git $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	git diff --quiet HEAD 2>/dev/null || v+="-dirty"
	echo "$v"
}
version_of() {
	case $1 in
	meridian | meridian-signed)
		# `meridian version` prints "meridian VERSION (goX.Y os/arch)".
		local v
		v=$("$MERIDIAN_BIN" version 2>/dev/null | awk 'NR == 1 { print $2 }') || true
		[[ -n $v && $v != dev ]] || v=$(git_version)
		echo "$v"
		;;
	knot) knotd -V 2>&1 | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -n1 ;;
	pdns) pdns_server --version 2>&1 | grep -oE 'Server [0-9]+\.[0-9]+\.[0-9]+' | head -n1 | cut -d' ' -f2 ;;
	# `coredns -version` prints "CoreDNS-X.Y.Z" first.
	coredns-meridian)
		echo "$("$COREDNS_MERIDIAN_BIN" -version 2>/dev/null | sed -nE '1s/^CoreDNS-//p'), plugin $(git_version)"
		;;
	coredns-fixed) "$COREDNS_FIXED_BIN" -version 2>/dev/null | sed -nE '1s/^CoreDNS-//p' ;;
	esac
}

CPU_MODEL=$(sed -nE 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n1)
[[ -n $CPU_MODEL ]] || CPU_MODEL=$(uname -m)
if [[ $BENCH_QUERIES == mix ]]; then
	MIX="80% \`$W_NAME A\` (weighted), 20% \`$G_NAME A\` (geo / static)"
elif [[ $BENCH_QUERIES == names ]]; then
	MIX="$BENCH_NAMES distinct names \`${N_PREFIX}0..$N_PREFIX$((BENCH_NAMES - 1)).$ZONE A\`, each once per pass in a shuffled order (Meridian: weighted services 70/30; Knot: static RRsets of both addresses); target Meridian/Knot per server CPU ≥ 0.95"
else
	MIX="100% \`$W_NAME A\` (weighted)"
fi

have_meridian=0
[[ " $BENCH_SERVERS " == *" meridian "* ]] && have_meridian=1
M_QPS='' M_PERCORE=''
if ((have_meridian)); then
	r=${BEST[meridian]}
	M_QPS=${R_QPS[meridian,$r]}
	M_PERCORE=$(awk -v q="$M_QPS" -v c="${R_CPU[meridian,$r]}" 'BEGIN { if (c > 0) printf "%.0f", q * 100 / c }')
fi

# QPS and QPS per server CPU of a server's median round ("" when not run).
qps_of() { [[ -n ${BEST[$1]:-} ]] && echo "${R_QPS[$1,${BEST[$1]}]}"; return 0; }
cpu_of() { [[ -n ${BEST[$1]:-} ]] && echo "${R_CPU[$1,${BEST[$1]}]}"; return 0; }
# "a/b QPS ratio; per-CPU ratio; both CPUs" for two servers, or nothing.
ratio_line() { # $1 = numerator server, $2 = denominator server
	local qa qb ca cb
	qa=$(qps_of "$1") qb=$(qps_of "$2") ca=$(cpu_of "$1") cb=$(cpu_of "$2")
	[[ -n $qa && -n $qb ]] || return 0
	awk -v qa="$qa" -v qb="$qb" -v ca="$ca" -v cb="$cb" 'BEGIN {
		printf "%.2f", qa / qb
		if (ca > 0 && cb > 0) printf " (per server CPU: %.2f; server CPU %d%% vs %d%%)", (qa / ca) / (qb / cb), ca, cb
	}'
}

DO_NOTE=""
[[ -z ${BEST[meridian-signed]:-} ]] || DO_NOTE=" (plus \`-D\`, the DO bit, for meridian-signed)"
REPORT=$TMP/report.md
{
	echo "## Meridian DNS benchmark"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "- machine: $NCPU CPUs (\`nproc\`), $CPU_MODEL, Linux $(uname -r)"
	echo "- servers pinned to CPU $BENCH_SERVER_CPU, dnsperf to CPU $BENCH_CLIENT_CPU; one UDP socket/worker each"
	echo "- dnsperf $(sed -nE 's/^Version //p' "$RESULTS_DIR"/dnsperf-*-1.txt | head -n1): \`dnsperf ${DNSPERF_ARGS[*]} -l $BENCH_SECONDS\` after a ${BENCH_WARMUP}s warm-up$DO_NOTE; rounds: $BENCH_ROUNDS (median shown)"
	echo "- queries: $MIX"
	echo
	echo "| server | version | QPS | lost | avg latency (ms) | server CPU | QPS per server CPU | Meridian/peer QPS | Meridian/peer QPS per CPU | other load srv/cli CPU |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	for s in $BENCH_SERVERS; do
		r=${BEST[$s]}
		awk -v name="$(label_of "$s")" -v ver="$(version_of "$s")" -v q="${R_QPS[$s,$r]}" \
			-v lost="${R_LOST[$s,$r]}" -v sent="${R_SENT[$s,$r]}" -v lat="${R_LAT[$s,$r]}" \
			-v cpu="${R_CPU[$s,$r]}" -v mq="$M_QPS" -v mpc="$M_PERCORE" -v self="$([[ $s == meridian ]] && echo 1 || echo 0)" \
			-v noise="${R_NOISE_S[$s,$r]:-?}% / ${R_NOISE_C[$s,$r]:-?}%" '
			BEGIN {
				pc = (cpu > 0) ? q * 100 / cpu : 0
				lostpct = (sent > 0) ? 100 * lost / sent : 0
				if (self)
					ratio = ratio2 = "1.00 (ref)"
				else if (mq == "")
					ratio = ratio2 = "n/a"
				else {
					ratio = sprintf("%.2f", mq / q)
					ratio2 = (pc > 0 && mpc != "") ? sprintf("%.2f", mpc / pc) : "n/a"
				}
				printf "| %s | %s | %.0f | %d (%.3f%%) | %.3f | %d%% | %.0f | %s | %s | %s |\n",
					name, ver, q, lost, lostpct, lat * 1000, cpu, pc, ratio, ratio2, noise
			}'
	done
	echo
	echo "The same rounds with the server's CPU by three rules (bench/README.md, \"Charging CPU\"): ticks = utime+stime of its threads (the table above);" \
		"scheduler = its threads' run time by the scheduler's clock (/proc/PID/task/*/schedstat); CPU busy = wall time less idle and stolen time of CPU $BENCH_SERVER_CPU" \
		"(the server plus the kernel's packet work there plus other load; needs one server CPU):"
	echo
	echo "| server | QPS | CPU: ticks / scheduler / CPU busy | QPS per CPU: ticks / scheduler / CPU busy | Meridian/peer per CPU: ticks / scheduler / CPU busy |"
	echo "|---|---:|---:|---:|---:|"
	mr=${BEST[meridian]:-}
	for s in $BENCH_SERVERS; do
		r=${BEST[$s]}
		awk -v name="$(label_of "$s")" -v q="${R_QPS[$s,$r]}" -v self="$([[ $s == meridian ]] && echo 1 || echo 0)" \
			-v c="${R_CPU[$s,$r]} ${R_CPUS[$s,$r]} ${R_CPUK[$s,$r]:-0}" -v mq="$M_QPS" \
			-v mc="${mr:+${R_CPU[meridian,$mr]} ${R_CPUS[meridian,$mr]} ${R_CPUK[meridian,$mr]:-0}}" '
			BEGIN {
				split(c, a, " "); split(mc, m, " ")
				cpu = pc = rat = ""
				for (i = 1; i <= 3; i++) {
					sep = (i < 3) ? " / " : ""
					cpu = cpu ((a[i] > 0) ? a[i] "%" : "?") sep
					p = (a[i] > 0) ? q * 100 / a[i] : 0
					pc = pc ((p > 0) ? sprintf("%.0f", p) : "?") sep
					if (self) x = "1.00"
					else if (mq == "" || m[i] <= 0 || p <= 0) x = "n/a"
					else x = sprintf("%.2f", (mq * 100 / m[i]) / p)
					rat = rat x sep
				}
				printf "| %s | %.0f | %s | %s | %s |\n", name, q, cpu, pc, rat
			}'
	done
	if [[ -n ${BEST[coredns-meridian]:-} && -n ${BEST[coredns-fixed]:-} ]]; then
		# Compared unrounded: 0.897 shows as 0.90 but does not meet 0.90.
		met=$(awk -v a="$(qps_of coredns-meridian)" -v b="$(qps_of coredns-fixed)" -v t="$BENCH_OVERHEAD_MIN" \
			'BEGIN { printf "%s (%.3f)", (a / b >= t) ? "met" : "NOT MET", a / b }')
		echo
		echo "Plugin overhead, same run (CoreDNS + meridian ÷ the same CoreDNS answering a fixed A record):"
		echo
		echo "- **coredns-meridian / coredns-fixed QPS: $(ratio_line coredns-meridian coredns-fixed)**;" \
			"target ≥ $BENCH_OVERHEAD_MIN: **$met**"
		if ((BENCH_ROUNDS > 1)); then
			line="- per round:"
			for ((r = 1; r <= BENCH_ROUNDS; r++)); do
				line+=$(awk -v a="${R_QPS[coredns-meridian,$r]}" -v b="${R_QPS[coredns-fixed,$r]}" 'BEGIN { printf " %.2f", a / b }')
			done
			echo "$line"
		fi
		if [[ -n ${BEST[meridian]:-} ]]; then
			echo "- meridian serve / coredns-meridian QPS: $(ratio_line meridian coredns-meridian)"
		fi
	elif [[ -n ${BEST[meridian]:-} && -n ${BEST[coredns-meridian]:-} ]]; then
		echo
		echo "- meridian serve / coredns-meridian QPS: $(ratio_line meridian coredns-meridian)"
	fi
	if [[ -n ${BEST[meridian]:-} && -n ${BEST[meridian-signed]:-} ]]; then
		echo
		echo "DNSSEC cost, same run (Meridian with the zone signed online, every query with DO=1 ÷ the same Meridian unsigned, queries without EDNS):"
		echo
		echo "- **DNSSEC cost, same run: meridian-signed / meridian QPS: $(ratio_line meridian-signed meridian)**"
		if ((BENCH_ROUNDS > 1)); then
			line="- per round:"
			for ((r = 1; r <= BENCH_ROUNDS; r++)); do
				line+=$(awk -v a="${R_QPS[meridian-signed,$r]}" -v b="${R_QPS[meridian,$r]}" 'BEGIN { printf " %.2f", a / b }')
			done
			echo "$line"
		fi
	fi
	echo
	echo "Weighted split seen by 400 \`dig\` queries for \`$W_NAME A\` (target 70% / 30%):"
	echo
	for s in $BENCH_SERVERS; do echo "- $(label_of "$s"): ${SPLIT[$s]}"; done
	bad=""
	for s in $BENCH_SERVERS; do
		for ((r = 1; r <= BENCH_ROUNDS; r++)); do
			[[ ${R_RCODES[$s,$r]} == "NOERROR "*"(100.00%)" ]] || bad+=" $(label_of "$s") round $r: ${R_RCODES[$s,$r]};"
		done
	done
	if [[ -n $bad ]]; then
		echo
		echo "Response codes other than NOERROR:$bad"
	fi
	noisy=""
	for s in $BENCH_SERVERS; do
		for ((r = 1; r <= BENCH_ROUNDS; r++)); do
			if ((${R_NOISE_S[$s,$r]:-0} > BENCH_NOISE_MAX || ${R_NOISE_C[$s,$r]:-0} > BENCH_NOISE_MAX)); then
				noisy+=" $(label_of "$s") round $r (${R_NOISE_S[$s,$r]}% / ${R_NOISE_C[$s,$r]}%);"
			fi
		done
	done
	if [[ -n $noisy || $QUIET == no ]]; then
		echo
		echo "**WARNING: disturbed run.** Other work shared the benchmark CPUs (more than ${BENCH_NOISE_MAX}%):${noisy:- before the start}"
		echo "Re-run on a quiet machine before quoting these numbers."
	fi
	if ((BENCH_ROUNDS > 1)); then
		echo
		echo "All rounds (QPS):"
		echo
		for s in $BENCH_SERVERS; do
			line="- $(label_of "$s"):"
			for ((r = 1; r <= BENCH_ROUNDS; r++)); do line+=" $(printf '%.0f' "${R_QPS[$s,$r]}")"; done
			echo "$line"
		done
	fi
	if ((BENCH_PROFILE)); then
		echo
		echo "Profiled run (BENCH_PROFILE=1): the CoreDNS servers were CPU-profiled during each measured run," \
			"which costs them a little QPS. Profiles: \`$RESULTS_DIR/cpu-<server>-<round>.pprof\`;" \
			"read them with \`go tool pprof -top bin/coredns-meridian $RESULTS_DIR/cpu-coredns-meridian-1.pprof\`."
	fi
	echo
	echo "Raw dnsperf output: \`$RESULTS_DIR/dnsperf-<server>-<round>.txt\`. Read bench/README.md before quoting a ratio:"
	echo "a server CPU well below 100% means dnsperf, not the server, was the limit."
} >"$REPORT"

cp "$REPORT" "$RESULTS_DIR/latest.md"
echo
cat "$REPORT"
echo
log "written to $RESULTS_DIR/latest.md"
