# Sourced by scripts/pbs-local.sh (which defines say, die, cannot, COMMIT, PREFIX, HOMES and
# ROOT): the Debian packages PBS needs, and the one-time build of OpenPBS from the vendored
# tarball into the cache, never the repository. 'pbs-local.sh build' runs cmd_build.

# INSTALL's Debian build list (real names of its virtual ncurses-dev and libexpat-dev), and the
# run side: Debian 12 names libical3 and libcjson1; sendmail and sudo are not needed.
BUILD_PACKAGES=(gcc make libtool libhwloc-dev libx11-dev libxt-dev libedit-dev libical-dev
                libncurses-dev perl postgresql-server-dev-all postgresql-contrib python3-dev tcl-dev
                tk-dev swig libexpat1-dev libssl-dev libxext-dev libxft-dev autoconf automake g++
                libcjson-dev)
RUN_PACKAGES=(expat libedit2 postgresql postgresql-contrib python3 tcl tk libical3 libcjson1
              iproute2 util-linux)

vendor_dir() {
  local d common
  for d in "${KSPTRACE_VENDOR_DIR:-}" "$ROOT/../shared/vendor"; do
    [ -n "$d" ] && [ -f "$d/openpbs-$COMMIT.tar.gz" ] && { echo "$d"; return 0; }
  done
  # a git worktree: the main checkout's sibling
  common=$(git -C "$ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  d="$(dirname "$(dirname "$common")")/shared/vendor"
  [ -n "$common" ] && [ -f "$d/openpbs-$COMMIT.tar.gz" ] && { echo "$d"; return 0; }
  return 1
}

install_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || cannot "missing Debian packages ${missing[*]}; install them as root"
  say "installing ${missing[*]}"
  apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null || cannot "could not install ${missing[*]}"
}

built() { [ -f "$PREFIX/.ksptrace-built" ] && [ -x "$PREFIX/sbin/pbs_server.bin" ]; }

# In the unpacked source $1: configure, make and install into $PREFIX. Debian's python3 (its
# python3-dev is installed), never one found earlier on PATH (pyenv): the server embeds the
# Python it was built with.
openpbs_make() {
  cd "$1" && export PATH=/usr/sbin:/usr/bin:/sbin:/bin &&
    ./autogen.sh && ./configure --prefix="$PREFIX" --with-python=/usr \
      --with-pbs-conf-file="$PREFIX/etc/pbs.conf" --with-pbs-server-home="$HOMES" &&
    make -j"$(nproc)" &&
    make install sysprofiledir="$PREFIX/etc/profile.d" unitfiledir="$PREFIX/lib/systemd"
}

# Runs "$@" in a subshell with its output in the log $1, then keeps the log at
# $PREFIX.build.log whatever the outcome (after a success it says what configure found;
# issue 66: it was deleted with the build folder); returns the command's status.
logged_build() {
  local log=$1 status=0
  shift
  ("$@") > "$log" 2>&1 || status=$?
  cp "$log" "$PREFIX.build.log" 2>/dev/null || true
  return "$status"
}

cmd_build() {
  built && return 0
  [ "$(id -u)" -eq 0 ] || cannot "building and running PBS needs root (setuid pbs_iff, PBS_HOME)"
  local vendor tarball
  vendor=$(vendor_dir) || cannot "openpbs-$COMMIT.tar.gz not found in ../shared/vendor; set KSPTRACE_VENDOR_DIR"
  tarball="$vendor/openpbs-$COMMIT.tar.gz"
  (cd "$vendor" && grep " openpbs-$COMMIT.tar.gz\$" SHA256SUMS | sha256sum -c --quiet -) ||
    die "$tarball does not match $vendor/SHA256SUMS; fetch it again (see $vendor/README.md)"
  install_packages "${BUILD_PACKAGES[@]}" "${RUN_PACKAGES[@]}"
  mkdir -p "$(dirname "$PREFIX")"
  exec 9> "$PREFIX.lock"
  flock 9  # a second builder waits here, then finds the build done
  if built; then exec 9>&-; return 0; fi
  local tmp start
  tmp=$(mktemp -d /tmp/ksptrace-openpbs-build.XXXXXX)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  start=$(date +%s)
  say "building OpenPBS $COMMIT into $PREFIX (5 to 16 minutes; log in $tmp/build.log, then" \
      "$PREFIX.build.log)" >&2
  tar -xzf "$tarball" -C "$tmp"
  rm -rf "$PREFIX"
  if ! logged_build "$tmp/build.log" openpbs_make "$tmp/openpbs-$COMMIT"; then
    rm -rf "$PREFIX"
    cannot "the OpenPBS build failed: $(tail -n 1 "$tmp/build.log"); see $PREFIX.build.log"
  fi
  chmod 4755 "$PREFIX/sbin/pbs_iff" "$PREFIX/sbin/pbs_rcp"  # make install resets them
  echo "$COMMIT built in $(($(date +%s) - start)) s at load $(cut -d' ' -f1 /proc/loadavg)" \
    > "$PREFIX/.ksptrace-built"
  say "built in $(($(date +%s) - start)) s; log in $PREFIX.build.log" >&2
  rm -rf "$tmp"
  trap - EXIT
  exec 9>&-  # the daemons 'start' runs next must not hold the lock
}
