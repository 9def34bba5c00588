/*
 * SOAP interop scenario with gSOAP (C): build.sh generates the stubs from the live server's
 * WSDL (wsdl2h + soapcpp2, SOAP 1.1 forced with -1) and links this file against them.
 * The endpoint is the soap:address of that WSDL, so the served address is tested too.
 *
 *   ardacat_gsoap_client <user> <password> <schema> [<expected SOAP minor version: 1 or 2>]
 *
 * Runs ping, getVersion, createSchema, createEntry, getAttributes, query/nextQuery and
 * faults (checking the MetadataFault detail code), then cleans up. Ends with the line
 * "N passed, M failed"; exits 1 if anything failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soapH.h"
#include "MetadataCatalogSoapBinding.nsmap"

static int passed = 0, failed = 0;
static char *user, *password;

/* gSOAP clears userid/passwd after every call: set them again for each one. */
static struct soap *A(struct soap *soap)
{
    soap->userid = user;
    soap->passwd = password;
    return soap;
}

static void check(const char *name, int ok, const char *detail)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s: %s\n", name, detail ? detail : "");
        fflush(stdout);
    }
}

/* The MetadataFault code of the last fault, or -1. */
static int fault_code(struct soap *soap)
{
    struct SOAP_ENV__Detail *d = NULL;
    if (!soap->fault)
        return -1;
    d = soap->fault->detail ? soap->fault->detail : soap->fault->SOAP_ENV__Detail;
    if (!d || !d->ns1__MetadataFault)
        return -1;
    return d->ns1__MetadataFault->code;
}

static const char *fault_text(struct soap *soap)
{
    const char **s = soap_faultstring(soap);
    return s && *s ? *s : "(no faultstring)";
}

static void expect_ok(struct soap *soap, const char *name, int rc)
{
    char buf[512];
    snprintf(buf, sizeof buf, "error %d: %s", rc, rc == SOAP_OK ? "" : fault_text(soap));
    check(name, rc == SOAP_OK, buf);
}

static void expect_fault(struct soap *soap, const char *name, int rc, int code)
{
    char buf[512];
    int got = rc == SOAP_OK ? -2 : fault_code(soap);
    snprintf(buf, sizeof buf, "expected MetadataFault code %d, got %d (rc %d: %s)", code, got, rc,
             rc == SOAP_OK ? "call succeeded" : fault_text(soap));
    check(name, rc != SOAP_OK && got == code, buf);
}

static struct ns1__Attribute attr(const char *name, const char *type, char *value)
{
    struct ns1__Attribute a;
    memset(&a, 0, sizeof a);
    a.name = (char *)name;
    a.type = (char *)type;
    a.value = value;
    return a;
}

int main(int argc, char **argv)
{
    struct soap *soap;
    char schema[256], pattern[300], buf[1024];
    int i, rc;

    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s <user> <password> <schema> [1|2]\n", argv[0]);
        return 2;
    }
    snprintf(schema, sizeof schema, "%s", argv[3]);
    soap = soap_new1(SOAP_C_UTFSTRING);
    user = argv[1];
    password = argv[2];
    soap->recv_timeout = 60;
    soap->send_timeout = 60;

    /* ping, getVersion */
    {
        struct _ns1__ping req;
        struct _ns1__pingResponse resp;
        memset(&req, 0, sizeof req);
        expect_ok(soap, "ping", soap_call___ns1__ping(A(soap), NULL, NULL, &req, &resp));
        /* soap->version is the envelope version of the response just read */
        snprintf(buf, sizeof buf, "answered in SOAP 1.%d", soap->version);
        check("SOAP version", argc < 5 || soap->version == atoi(argv[4]), buf);
        printf("gSOAP client: %s\n", buf);
    }
    {
        struct _ns1__getVersion req;
        struct _ns1__getVersionResponse resp;
        memset(&req, 0, sizeof req);
        rc = soap_call___ns1__getVersion(A(soap), NULL, NULL, &req, &resp);
        expect_ok(soap, "getVersion", rc);
        check("getVersion text", rc == SOAP_OK && resp.version && strstr(resp.version, "ardacat"),
              rc == SOAP_OK && resp.version ? resp.version : "(none)");
    }

    /* createSchema with two typed attributes */
    {
        struct _ns1__createSchema req;
        struct _ns1__createSchemaResponse resp;
        struct ns1__Attribute attrs[2];
        attrs[0] = attr("size", "int", NULL);
        attrs[1] = attr("label", "varchar(32)", NULL);
        memset(&req, 0, sizeof req);
        req.schemaName = schema;
        req.__sizeattribute = 2;
        req.attribute = attrs;
        expect_ok(soap, "createSchema", soap_call___ns1__createSchema(A(soap), NULL, NULL, &req, &resp));
        /* the same again: ExistsException, code 16 */
        rc = soap_call___ns1__createSchema(A(soap), NULL, NULL, &req, &resp);
        expect_fault(soap, "createSchema exists", rc, 16);
    }

    /* createEntry: 20 entries, the odd ones without a label */
    {
        struct _ns1__createEntry req;
        struct _ns1__createEntryResponse resp;
        struct ns1__Entry entries[20];
        struct ns1__Attribute attrs[20][2];
        static char names[20][16], sizes[20][16], labels[20][32];
        for (i = 0; i < 20; i++) {
            snprintf(names[i], sizeof names[i], "g%02d", i);
            snprintf(sizes[i], sizeof sizes[i], "%d", i * 10);
            snprintf(labels[i], sizeof labels[i], "label <%d> & \"q\"", i);
            attrs[i][0] = attr("size", NULL, sizes[i]);
            attrs[i][1] = attr("label", NULL, labels[i]);
            memset(&entries[i], 0, sizeof entries[i]);
            entries[i].name = names[i];
            entries[i].__sizeattribute = i % 2 == 0 ? 2 : 1;
            entries[i].attribute = attrs[i];
        }
        memset(&req, 0, sizeof req);
        req.schemaName = schema;
        req.__sizeentry = 20;
        req.entry = entries;
        rc = soap_call___ns1__createEntry(A(soap), NULL, NULL, &req, &resp);
        expect_ok(soap, "createEntry", rc);
        snprintf(buf, sizeof buf, "created %d", rc == SOAP_OK ? resp.created : -1);
        check("createEntry count", rc == SOAP_OK && resp.created == 20, buf);
        /* an invalid int: InvalidArgumentException, code 18, and nothing is created */
        req.__sizeentry = 1;
        attrs[0][0] = attr("size", NULL, "not-a-number");
        names[0][0] = 'x';
        rc = soap_call___ns1__createEntry(A(soap), NULL, NULL, &req, &resp);
        expect_fault(soap, "createEntry bad value", rc, 18);
    }

    /* getAttributes: two named entries, attributes in the requested order */
    {
        struct _ns1__getAttributes req;
        struct _ns1__getAttributesResponse resp;
        char e1[300], e2[300];
        char *entry_names[2], *attr_names[2];
        snprintf(e1, sizeof e1, "%s/g04", schema);
        snprintf(e2, sizeof e2, "%s/g03", schema);
        entry_names[0] = e1;
        entry_names[1] = e2;
        attr_names[0] = "label";
        attr_names[1] = "size";
        memset(&req, 0, sizeof req);
        req.__sizeentryName = 2;
        req.entryName = entry_names;
        req.__sizeattributeName = 2;
        req.attributeName = attr_names;
        rc = soap_call___ns1__getAttributes(A(soap), NULL, NULL, &req, &resp);
        expect_ok(soap, "getAttributes", rc);
        if (rc == SOAP_OK) {
            int ok = resp.__sizeentry == 2;
            ok = ok && strcmp(resp.entry[0].name, e1) == 0 && strcmp(resp.entry[1].name, e2) == 0;
            ok = ok && resp.entry[0].__sizeattribute == 2 && resp.entry[1].__sizeattribute == 2;
            ok = ok && strcmp(resp.entry[0].attribute[0].name, "label") == 0;
            ok = ok && resp.entry[0].attribute[0].value && strcmp(resp.entry[0].attribute[0].value, "label <4> & \"q\"") == 0;
            ok = ok && resp.entry[0].attribute[1].value && strcmp(resp.entry[0].attribute[1].value, "40") == 0;
            ok = ok && resp.entry[1].attribute[0].value == NULL; /* xsi:nil */
            ok = ok && resp.entry[1].attribute[1].value && strcmp(resp.entry[1].attribute[1].value, "30") == 0;
            check("getAttributes values", ok, "unexpected entries or values");
        }
        /* a missing entry: NotExistsException, code 1; a missing attribute: code 10 */
        snprintf(e1, sizeof e1, "%s/nope", schema);
        req.__sizeentryName = 1;
        rc = soap_call___ns1__getAttributes(A(soap), NULL, NULL, &req, &resp);
        expect_fault(soap, "getAttributes missing entry", rc, 1);
        snprintf(e1, sizeof e1, "%s/g01", schema);
        attr_names[0] = "nosuch";
        rc = soap_call___ns1__getAttributes(A(soap), NULL, NULL, &req, &resp);
        expect_fault(soap, "getAttributes missing attribute", rc, 10);
    }

    /* query / nextQuery: 20 rows in pages of 6, in size order */
    {
        struct _ns1__query req;
        struct _ns1__queryResponse resp;
        char sel0[300], sel1[300], order[300];
        char *select[2];
        unsigned int page = 6;
        int rows = 0, pages = 0, in_order = 1, last = -1;
        struct ns1__MDResult *r;
        snprintf(sel0, sizeof sel0, "%s:FILE", schema);
        snprintf(sel1, sizeof sel1, "%s:size", schema);
        snprintf(order, sizeof order, "%s:size", schema);
        select[0] = sel0;
        select[1] = sel1;
        memset(&req, 0, sizeof req);
        req.__sizeselect = 2;
        req.select = select;
        req.orderBy = order;
        req.pageSize = &page;
        rc = soap_call___ns1__query(A(soap), NULL, NULL, &req, &resp);
        expect_ok(soap, "query", rc);
        r = rc == SOAP_OK ? resp.result : NULL;
        while (r) {
            struct _ns1__nextQuery next;
            struct _ns1__nextQueryResponse next_resp;
            pages++;
            for (i = 0; i < r->__sizerow; i++) {
                int v = r->row[i].__sizevalue == 2 && r->row[i].value[1] ? atoi(r->row[i].value[1]) : -1;
                if (v <= last)
                    in_order = 0;
                last = v;
                rows++;
            }
            if (r->more != xsd__boolean__true_ || !r->token)
                break;
            memset(&next, 0, sizeof next);
            next.token = r->token;
            next.pageSize = &page;
            rc = soap_call___ns1__nextQuery(A(soap), NULL, NULL, &next, &next_resp);
            expect_ok(soap, "nextQuery", rc);
            r = rc == SOAP_OK ? next_resp.result : NULL;
        }
        snprintf(buf, sizeof buf, "%d rows in %d pages, in order: %d", rows, pages, in_order);
        check("paging", rows == 20 && pages == 4 && in_order, buf);
    }

    /* a forged token: InvalidArgumentException, code 8 */
    {
        struct _ns1__nextQuery req;
        struct _ns1__nextQueryResponse resp;
        memset(&req, 0, sizeof req);
        req.token = "forged.token";
        rc = soap_call___ns1__nextQuery(A(soap), NULL, NULL, &req, &resp);
        expect_fault(soap, "forged token", rc, 8);
    }

    /* clean up: remove the entries, drop the schema */
    {
        struct _ns1__removeEntry req;
        struct _ns1__removeEntryResponse resp;
        snprintf(pattern, sizeof pattern, "%s/*", schema);
        memset(&req, 0, sizeof req);
        req.pattern = pattern;
        rc = soap_call___ns1__removeEntry(A(soap), NULL, NULL, &req, &resp);
        expect_ok(soap, "removeEntry", rc);
        check("removeEntry count", rc == SOAP_OK && resp.removed == 20, "wrong count");
    }
    {
        struct _ns1__dropSchema req;
        struct _ns1__dropSchemaResponse resp;
        memset(&req, 0, sizeof req);
        req.schemaName = schema;
        expect_ok(soap, "dropSchema", soap_call___ns1__dropSchema(A(soap), NULL, NULL, &req, &resp));
    }

    printf("%d passed, %d failed\n", passed, failed);
    soap_destroy(soap);
    soap_end(soap);
    soap_free(soap);
    return failed ? 1 : 0;
}
