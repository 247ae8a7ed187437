#!/usr/bin/env bash
# openapi-generator (org.openapitools:openapi-generator-cli from Maven Central), which
# test/integration/generated-clients.test.ts runs to make a Go client of the served document:
# the CLI's jar, fetched once by Maven into a cache outside the repo (checksums enforced), and
# Java to run it, Debian's default-jre-headless (and maven to fetch the jar) when missing.
# Prints `java <path>` and `jar <path>`, one a line. Fetches only when the pin changes.
set -euo pipefail
VERSION="7.25.0"
cache="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}/openapi-generator"
jar="$cache/openapi-generator-cli-$VERSION.jar"

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 && return 0
    apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 && return 0
  fi
  return 1
}

if ! command -v java >/dev/null 2>&1; then
  echo "installing Debian's default-jre-headless (Java, for openapi-generator)..." >&2
  apt_install default-jre-headless || { echo "ensure-openapi-generator: no java, and apt-get could not install default-jre-headless" >&2; exit 1; }
fi

if [ ! -f "$jar" ]; then
  if ! command -v mvn >/dev/null 2>&1; then
    echo "installing Debian's maven (to fetch openapi-generator from Maven Central)..." >&2
    apt_install maven || { echo "ensure-openapi-generator: no mvn, and apt-get could not install maven" >&2; exit 1; }
  fi
  echo "fetching openapi-generator-cli $VERSION from Maven Central (once; cached in $cache)..." >&2
  mkdir -p "$cache"
  # A local repository of its own, so the jar's place is known whatever settings.xml says.
  if ! out="$(mvn -B -q -C -Dstyle.color=never -Dmaven.repo.local="$cache/m2" dependency:get \
    -Dartifact="org.openapitools:openapi-generator-cli:$VERSION" -Dtransitive=false 2>&1)"; then
    echo "$out" >&2
    exit 1
  fi
  cp "$cache/m2/org/openapitools/openapi-generator-cli/$VERSION/openapi-generator-cli-$VERSION.jar" "$jar.tmp"
  mv "$jar.tmp" "$jar"
  rm -rf "$cache/m2"
fi

echo "java $(command -v java)"
echo "jar $jar"
