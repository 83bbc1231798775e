# Checksums of what the scripts download (sourced; the sourcing script defines `die` and `log`).
#
# Maven Central publishes a SHA-1 beside every artifact (`<file>.sha1`). The scripts fetch with
# `mvn -C` (--strict-checksums: a download whose published SHA-1 does not match fails), and
# Maven keeps those published sums beside the artifacts in its local repository. Before a
# fetched file is used, `verify_maven_files` checks it against that published SHA-1 — so a file
# altered in the local repository or in sidejoin's caches after the download is refused too.
# PyPI downloads (scripts/flink.sh) are pinned by sha256 in the repository instead
# (pip --require-hashes).

# The local Maven repository (Maven's default; MAVEN_REPO_LOCAL names another).
maven_repo() {
  printf '%s\n' "${MAVEN_REPO_LOCAL:-${HOME}/.m2/repository}"
}

# verify_cache_once MARKER FILE...: verify_maven_files, once per cache (MARKER records it), for
# caches fetched before their files were checked.
verify_cache_once() {
  local marker="$1"
  shift
  [[ -f "$marker" ]] && return 0
  verify_maven_files "$@"
  date -u +%Y-%m-%dT%H:%M:%SZ >"$marker"
}

# verify_maven_files FILE...: each FILE (named as Maven names the artifact) has the SHA-1 that
# Maven Central published for it; dies naming every one that has not, or has no published sum.
verify_maven_files() {
  local repo line sum name f want got bad=0
  repo="$(maven_repo)"
  declare -A published=()
  while IFS= read -r line; do
    name="$(basename "${line%.sha1}")"
    published["$name"]="$line"
  done < <(find "$repo" -type f -name '*.sha1' 2>/dev/null)
  for f in "$@"; do
    name="$(basename "$f")"
    sum="${published[$name]:-}"
    if [[ -z "$sum" ]]; then
      log "no published SHA-1 for ${name} in ${repo}"
      bad=1
      continue
    fi
    want="$(tr -d '\r' <"$sum" | awk '{print tolower($1); exit}')"
    got="$(sha1sum "$f" | awk '{print $1}')"
    if [[ "$want" != "$got" ]]; then
      log "SHA-1 mismatch: ${f} is ${got}; Maven Central publishes ${want} (${sum})"
      bad=1
    fi
  done
  ((bad == 0)) || die "checksum verification failed (delete the cache named above and the Maven artifact to fetch them again)"
  log "checked ${#} file(s) against the SHA-1 Maven Central publishes"
}
