# shellcheck shell=bash
# Sourced by scripts/setup.sh and scripts/check_torch2.sh: the host's Debian archive entries, read at run
# time from its APT configuration, so the repository itself names no archive address.
#
#   debian_stanzas [FILE]   prints, as deb822 stanzas separated by blank lines, the `Types: deb` stanzas
#                           of FILE (default /etc/apt/sources.list.d/debian.sources) keeping only URIs,
#                           Suites, Components and Signed-By (no Types line: the caller adds its own);
#                           when FILE does not exist, the `deb` lines of /etc/apt/sources.list instead
#                           (one stanza per line, `[signed-by=...]` becoming Signed-By). Prints nothing
#                           (and returns 1) when neither file has an entry.
debian_stanzas() {
  local file=${1:-/etc/apt/sources.list.d/debian.sources} out
  if [ -f "$file" ]; then
    out="$(awk 'BEGIN { RS = ""; FS = "\n" }
      /(^|\n)Types:[^\n]*deb([ \t\n]|$)/ {
        out = ""
        for (i = 1; i <= NF; i++)
          if ($i ~ /^(URIs|Suites|Components|Signed-By):/) out = out (out == "" ? "" : "\n") $i
        printf "%s%s\n", (n++ ? "\n" : ""), out
      }' "$file")"
  elif [ -f /etc/apt/sources.list ]; then
    out="$(awk '$1 == "deb" {
        i = 2; signed = ""
        if ($2 ~ /^\[/) {                      # [opt=value ...] up to the word ending in ]
          for (; i <= NF; i++) {
            w = $i; gsub(/[][]/, "", w)
            if (w ~ /^signed-by=/) signed = substr(w, 11)
            if ($i ~ /\]$/) { i++; break }
          }
        }
        comps = ""
        for (j = i + 2; j <= NF; j++) comps = comps (comps == "" ? "" : " ") $j
        printf "%sURIs: %s\nSuites: %s\nComponents: %s\n", (n++ ? "\n" : ""), $i, $(i + 1), comps
        if (signed != "") printf "Signed-By: %s\n", signed
      }' /etc/apt/sources.list)"
  fi
  [ -n "$out" ] || return 1
  printf '%s\n' "$out"
}
