#!/usr/bin/env bash
# Generates gSOAP C clients from the live server's WSDL and builds them with client.c.
#
#   build.sh <wsdl-url> [build-dir]      (build-dir defaults to tests/interop/gsoap/build)
#
# Needs wsdl2h, soapcpp2 and libgsoap (Debian: gsoap libgsoap-dev) and a C compiler. The
# generated files stay in the build directory, which git ignores. Two clients are built from
# the same stubs' header: <build-dir>/soap11/ardacat_gsoap_client (soapcpp2 -1, SOAP 1.1) and
# <build-dir>/soap12/ardacat_gsoap_client (soapcpp2 -2, SOAP 1.2). The version must be forced:
# the WSDL has a SOAP 1.2 binding too, and wsdl2h's output would otherwise send 1.2 to both.
# Prints the two client paths on its last two lines.
set -euo pipefail

url=${1:?usage: build.sh <wsdl-url> [build-dir]}
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here/build}

import=""
for d in /usr/share/gsoap/import /usr/local/share/gsoap/import; do
    if [ -f "$d/soap12.h" ]; then import=$d; break; fi
done
[ -n "$import" ] || { echo "gSOAP import directory (soap12.h) not found" >&2; exit 1; }

mkdir -p "$out"
cd "$out"
rm -f ardacat.h wsdl2h.log
wsdl2h -c -o ardacat.h "$url" >wsdl2h.log 2>&1 || { cat wsdl2h.log >&2; exit 1; }

flags=$(pkg-config --cflags --libs gsoap)
for v in 1 2; do
    dir="$out/soap1$v"
    rm -rf "$dir"
    mkdir -p "$dir"
    (
        cd "$dir"
        soapcpp2 -c "-$v" -C -L -x -I"$import" ../ardacat.h >soapcpp2.log 2>&1 || { cat soapcpp2.log >&2; exit 1; }
        # shellcheck disable=SC2086
        cc -O1 -o ardacat_gsoap_client "$here/client.c" soapC.c soapClient.c -I. $flags
    )
done
echo "$out/soap11/ardacat_gsoap_client"
echo "$out/soap12/ardacat_gsoap_client"
