#!/usr/bin/env bash
# Generates JAX-WS stubs from the live server's WSDL and compiles them with Scenario.java.
#
#   build.sh <wsdl-url> <build-dir>
#
# Needs wsimport and the JAX-WS reference implementation (Debian: jaxws libjaxws-java) and a JDK.
# `wsimport -extension` also generates the SOAP 1.2 port (JAX-WS calls its binding non-standard and
# otherwise leaves it out). Prints, on its last line, the class path to run `Scenario` with.
set -euo pipefail

url=${1:?usage: build.sh <wsdl-url> <build-dir>}
out=${2:?usage: build.sh <wsdl-url> <build-dir>}
here=$(cd "$(dirname "$0")" && pwd)
rt=/usr/share/java/jaxws-rt.jar   # its manifest's Class-Path names the rest of the runtime
[ -f "$rt" ] || { echo "$rt not found (Debian package libjaxws-java)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/gen" "$out/classes"
wsimport -extension -keep -Xnocompile -quiet -p org.ardacat.interop -s "$out/gen" "$url" >"$out/wsimport.log" 2>&1 \
    || { cat "$out/wsimport.log" >&2; exit 1; }
find "$out/gen" -name '*.java' >"$out/sources"
echo "$here/Scenario.java" >>"$out/sources"
javac -nowarn -encoding UTF-8 -cp "$rt" -d "$out/classes" @"$out/sources"
echo "$out/classes:$rt"
