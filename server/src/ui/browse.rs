//! The read pages of the web interface: a collection (breadcrumbs, sub-collections with entry
//! counts, schema, owner/group/mode, ACLs, the entries table with keyset paging over the
//! catalogue's cursor tokens, sorting, page size, the query field `q`) and an entry (its values
//! and edit forms); CSV / JSON export of the same query is `super::export`. It translates only: every
//! permission is the catalogue's (hidden collections are those `stat` refuses; hidden entries
//! never leave the store), and it must not build SQL.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use ardacat_core::service::{Names, SelectSpec};
use ardacat_core::{Error, Result, RowSink, path};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;

use super::html::{browse_href, csrf_field, error_box, esc, hidden, url};
use super::{Ctx, UiState, ctx, error_page, html_response};

mod entry;
mod table;

use entry::*;
use table::*;

pub(super) use table::{column_names, entries_spec};

/// Page sizes offered; any size from 1 to [`MAX_PAGE`] is accepted.
const PAGE_SIZES: [usize; 5] = [10, 25, 50, 100, 500];
const DEFAULT_PAGE: usize = 50;
const MAX_PAGE: usize = 1000;
/// Sub-collections listed on a collection page (each costs a permission check and a count).
const MAX_CHILDREN: usize = 200;

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// What a collection page or an export was asked for.
pub(super) struct View {
    pub(super) q: String,
    pub(super) sort: Option<String>,
    pub(super) desc: bool,
    pub(super) size: usize,
    /// A continuation token (query language), or a page number (native SQL).
    pub(super) after: Option<String>,
    pub(super) page: usize,
}

impl View {
    pub(super) fn from(p: &HashMap<String, String>) -> View {
        let size = p.get("size").and_then(|s| s.parse::<usize>().ok()).unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
        View {
            q: p.get("q").map(|s| s.trim().to_string()).unwrap_or_default(),
            sort: p.get("sort").filter(|s| !s.is_empty()).cloned(),
            desc: p.get("dir").is_some_and(|d| d == "desc"),
            size,
            after: p.get("after").filter(|s| !s.is_empty()).cloned(),
            page: p.get("page").and_then(|s| s.parse().ok()).unwrap_or(0),
        }
    }

    /// The query string of this view with some fields replaced (for links).
    fn link(&self, sort: Option<(&str, bool)>, after: Option<&str>, page: Option<usize>) -> String {
        let mut out = format!("?q={}&size={}", url(&self.q), self.size);
        let sort = sort.or(self.sort.as_deref().map(|s| (s, self.desc)));
        if let Some((s, desc)) = sort {
            let _ = write!(out, "&sort={}&dir={}", url(s), if desc { "desc" } else { "asc" });
        }
        if let Some(a) = after {
            let _ = write!(out, "&after={}", url(a));
        }
        if let Some(p) = page {
            let _ = write!(out, "&page={p}");
        }
        out
    }
}

/// Is `q` a native SQL statement (rather than a query-language condition)?
pub(super) fn is_sql(q: &str) -> bool {
    let first = q.split_whitespace().next().unwrap_or("");
    ["select", "insert", "update", "delete"].iter().any(|k| first.eq_ignore_ascii_case(k))
}

/// Can the query language name this collection (`/a/b:attr`)? Its lexer takes paths of
/// `[A-Za-z0-9_.-/]` only; other collections are listed without query and sorting.
pub(super) fn queryable(path: &str) -> bool {
    path.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
}

// ------------------------------------------------------------------------------------------
// Pages

/// `/ui/browse/` and `/ui/browse/<path>` (no path: the root).
pub(super) async fn browse(
    State(st): State<Arc<UiState>>,
    headers: HeaderMap,
    uri: Uri,
    target: Option<Path<String>>,
    Query(p): Query<HashMap<String, String>>,
) -> Response {
    show(st, headers, uri, target.map(|Path(t)| t).unwrap_or_default(), p).await
}

async fn show(st: Arc<UiState>, headers: HeaderMap, uri: Uri, target: String, p: HashMap<String, String>) -> Response {
    let mut ctx = match ctx(&st, &headers, &uri).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let abs = match path::absolute("/", &format!("/{target}")) {
        Ok(a) => a,
        Err(e) => return error_page(&ctx, &e, "/ui/browse/"),
    };
    let cat = st.shared.catalogue.clone();
    let stat = match cat.stat(&mut ctx.s, &abs).await {
        Ok(rows) => rows,
        Err(e) => return error_page(&ctx, &e, &parent_href(&abs)),
    };
    let Some(row) = stat.into_iter().find(|r| r.first().and_then(|v| v.as_deref()) == Some(abs.as_str())) else {
        return error_page(&ctx, &Error::NotFound(abs.clone()), &parent_href(&abs));
    };
    let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
    let props = Props { owner: text(2), group: text(3), mode: text(4) };
    let result = if text(1) == "collection" {
        collection_page(&st, &mut ctx, &abs, &props, View::from(&p)).await
    } else {
        entry_page(&st, &mut ctx, &abs, &props).await
    };
    match result {
        Ok(body) => html_response(StatusCode::OK, ctx.page(&abs, &body)),
        Err(e) => error_page(&ctx, &e, &parent_href(&abs)),
    }
}

struct Props {
    owner: String,
    group: String,
    mode: String,
}

fn parent_href(abs: &str) -> String {
    browse_href(path::split(abs).map(|(p, _)| p).unwrap_or("/"))
}

/// `/ a / b` with a link on every ancestor.
fn breadcrumbs(abs: &str) -> String {
    let mut out =
        String::from("<nav aria-label=\"breadcrumb\" class=\"crumbs\"><ol><li><a href=\"/ui/browse/\">/</a></li>");
    let mut at = String::new();
    let parts: Vec<&str> = abs.split('/').filter(|s| !s.is_empty()).collect();
    for (i, part) in parts.iter().enumerate() {
        at.push('/');
        at.push_str(part);
        if i + 1 == parts.len() {
            let _ = write!(out, "<li aria-current=\"page\">{}</li>", esc(part));
        } else {
            let _ = write!(out, "<li><a href=\"{}\">{}</a></li>", esc(&browse_href(&at)), esc(part));
        }
    }
    out.push_str("</ol></nav>");
    out
}

/// A POST form to `/ui/do` with the CSRF field, `op`, `path` and a return address.
fn action_form(ctx: &Ctx, op: &str, target: &str, back: &str, fields: &str, button: &str) -> String {
    format!(
        "<form method=\"post\" action=\"/ui/do\" class=\"action\">{}<input type=\"hidden\" name=\"op\" value=\"{op}\">\
         <input type=\"hidden\" name=\"path\" value=\"{}\"><input type=\"hidden\" name=\"back\" value=\"{}\">{fields}\
         <button type=\"submit\">{button}</button></form>",
        csrf_field(&ctx.web.csrf),
        esc(target),
        esc(back)
    )
}

fn props_section(ctx: &Ctx, abs: &str, props: &Props, acl: &Result<Vec<(String, String)>>, back: &str) -> String {
    let mut out = format!(
        "<section aria-labelledby=\"h-props\"><h2 id=\"h-props\">Owner and permissions</h2><dl class=\"props\">\
         <dt>Owner</dt><dd id=\"owner\">{}</dd><dt>Group</dt><dd id=\"group\">{}</dd><dt>Mode</dt><dd id=\"mode\"><code>{}</code></dd></dl>",
        esc(&props.owner),
        esc(&props.group),
        esc(&props.mode)
    );
    out.push_str("<h3>ACL</h3>");
    match acl {
        Ok(rows) if rows.is_empty() => out.push_str("<p>No ACL entries.</p>"),
        Ok(rows) => {
            out.push_str("<table class=\"acl\"><thead><tr><th scope=\"col\">Principal</th><th scope=\"col\">Rights</th><th scope=\"col\"></th></tr></thead><tbody>");
            for (who, rights) in rows {
                let remove = action_form(ctx, "acl_remove", abs, back, &hidden("principal", who), "Remove");
                let _ =
                    write!(out, "<tr><td>{}</td><td><code>{}</code></td><td>{remove}</td></tr>", esc(who), esc(rights));
            }
            out.push_str("</tbody></table>");
        }
        Err(e) => out.push_str(&error_box(&e.public_message(), None)),
    }
    out.push_str(&action_form(
        ctx,
        "chmod",
        abs,
        back,
        &format!("<label>Mode <input name=\"mode\" value=\"{}\" size=\"9\" required></label>", esc(&props.mode)),
        "Change mode",
    ));
    out.push_str(&action_form(
        ctx,
        "acl_add",
        abs,
        back,
        "<label>User or <code>group:name</code> <input name=\"principal\" required></label>\
         <label>Rights <input name=\"rights\" value=\"r\" size=\"3\" required></label>",
        "Add ACL entry",
    ));
    out.push_str("</section>");
    out
}

async fn collection_page(st: &UiState, ctx: &mut Ctx, abs: &str, props: &Props, view: View) -> Result<String> {
    let cat = st.shared.catalogue.clone();
    let here = browse_href(abs);
    let mut body = format!("<h1>{}</h1>", breadcrumbs(abs));
    let head_end = body.len();

    // Sub-collections: only those the caller may read (stat refuses the others).
    let children = cat.list_collections(&mut ctx.s, abs).await?;
    body.push_str("<section aria-labelledby=\"h-colls\"><h2 id=\"h-colls\">Collections</h2>");
    let mut rows = String::new();
    for child in children.iter().take(MAX_CHILDREN) {
        let Ok(st) = cat.stat(&mut ctx.s, child).await else { continue };
        let Some(r) = st.first() else { continue };
        let get = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
        let count = if queryable(child) {
            let mut out: Vec<Vec<Option<String>>> = Vec::new();
            match cat.sql(&mut ctx.s, &format!("SELECT COUNT(*) FROM {child}"), &mut out).await {
                Ok(_) => out.get(1).and_then(|r| r.first().cloned().flatten()).unwrap_or_else(|| "0".into()),
                Err(_) => "–".into(),
            }
        } else {
            "–".into()
        };
        let name = path::split(child).map(|(_, n)| n).unwrap_or(child);
        let _ = write!(
            rows,
            "<tr><td><a href=\"{}\">{}</a></td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(&browse_href(child)),
            esc(name),
            esc(&count),
            esc(&get(2)),
            esc(&get(3)),
            esc(&get(4))
        );
    }
    if rows.is_empty() {
        body.push_str("<p>No sub-collections.</p>");
    } else {
        let _ = write!(
            body,
            "<div class=\"scroll\"><table class=\"collections\"><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Entries</th>\
             <th scope=\"col\">Owner</th><th scope=\"col\">Group</th><th scope=\"col\">Mode</th></tr></thead><tbody>{rows}</tbody></table></div>"
        );
        if children.len() > MAX_CHILDREN {
            let _ = write!(body, "<p>The first {MAX_CHILDREN} of {} are listed.</p>", children.len());
        }
    }
    body.push_str(&action_form(
        ctx,
        "createdir",
        abs,
        &here,
        "<label>New collection <input name=\"name\" required></label>\
         <label><input type=\"checkbox\" name=\"plain\" value=\"1\"> without the attributes of this one</label>",
        "Create collection",
    ));
    body.push_str("</section>");

    // Schema.
    let attrs = cat.listattr(&mut ctx.s, abs).await?;
    body.push_str("<section aria-labelledby=\"h-schema\"><h2 id=\"h-schema\">Schema</h2>");
    if attrs.is_empty() {
        body.push_str("<p>No attributes.</p>");
    } else {
        body.push_str("<table class=\"schema\"><thead><tr><th scope=\"col\">Attribute</th><th scope=\"col\">Type</th><th scope=\"col\">Indexed</th><th scope=\"col\"></th></tr></thead><tbody>");
        for a in &attrs {
            let remove = action_form(ctx, "removeattr", abs, &here, &hidden("name", &a.name), "Remove");
            let _ = write!(
                body,
                "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{remove}</td></tr>",
                esc(&a.name),
                esc(&a.attr_type.to_string()),
                if a.indexed { "yes" } else { "no" }
            );
        }
        body.push_str("</tbody></table>");
    }
    match cat.index_list(&mut ctx.s, abs).await {
        Ok(ix) if !ix.is_empty() => {
            body.push_str("<h3>Indexes</h3><ul class=\"indexes\">");
            for i in ix {
                let _ = write!(body, "<li>{} ({})</li>", esc(&i.name), esc(&i.columns.join(", ")));
            }
            body.push_str("</ul>");
        }
        Ok(_) => {}
        Err(e) => body.push_str(&error_box(&e.public_message(), None)),
    }
    match cat.constraint_list(&mut ctx.s, abs).await {
        Ok(cs) if !cs.is_empty() => {
            body.push_str("<h3>Constraints</h3><table class=\"constraints\"><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Kind</th><th scope=\"col\">Definition</th></tr></thead><tbody>");
            for c in cs {
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                    esc(&c.name),
                    esc(c.kind),
                    esc(&c.definition)
                );
            }
            body.push_str("</tbody></table>");
        }
        Ok(_) => {}
        Err(e) => body.push_str(&error_box(&e.public_message(), None)),
    }
    body.push_str(&action_form(
        ctx,
        "addattr",
        abs,
        &here,
        "<label>New attribute <input name=\"name\" required></label>\
         <label>Type <select name=\"type\"><option>int</option><option>float</option><option selected>varchar(255)</option>\
         <option>text</option><option>timestamp</option><option>bool</option></select></label>\
         <label><input type=\"checkbox\" name=\"indexed\" value=\"1\"> indexed</label>",
        "Add attribute",
    ));
    body.push_str("</section>");

    let acl = cat.acl_show(&mut ctx.s, abs).await;
    body.push_str(&props_section(ctx, abs, props, &acl, &here));

    // Entries: query form, table, paging (shown first, below the heading).
    let entries_start = body.len();
    body.push_str("<section aria-labelledby=\"h-entries\"><h2 id=\"h-entries\">Entries</h2>");
    let _ = write!(
        body,
        "<form method=\"get\" action=\"{}\" class=\"query\" role=\"search\">\
         <label for=\"q\">Query (condition, or a SQL <code>SELECT</code>)</label>\
         <input id=\"q\" name=\"q\" value=\"{}\" placeholder=\"size &gt; 10 and name like &quot;a%&quot;\">",
        esc(&here),
        esc(&view.q)
    );
    if let Some(s) = &view.sort {
        let _ = write!(
            body,
            "<input type=\"hidden\" name=\"sort\" value=\"{}\"><input type=\"hidden\" name=\"dir\" value=\"{}\">",
            esc(s),
            if view.desc { "desc" } else { "asc" }
        );
    }
    body.push_str("<label>Page size <select name=\"size\" class=\"autosubmit\">");
    for n in PAGE_SIZES {
        let _ = write!(body, "<option{}>{n}</option>", if n == view.size { " selected" } else { "" });
    }
    body.push_str("</select></label><button type=\"submit\">Run</button></form>");
    let export = browse_href(abs).replacen("/ui/browse", "/ui/export", 1);
    let plain = view.link(None, None, None);
    let _ = write!(
        body,
        "<p class=\"export\">Export: <a href=\"{}\" id=\"export-csv\">CSV</a> · <a href=\"{}\" id=\"export-json\">JSON</a></p>",
        esc(&format!("{export}{plain}&format=csv")),
        esc(&format!("{export}{plain}&format=json"))
    );

    let table = if is_sql(&view.q) {
        sql_table(st, ctx, abs, &view).await
    } else if queryable(abs) {
        query_table(st, ctx, abs, &attrs, &view).await
    } else if view.q.is_empty() {
        plain_table(st, ctx, abs, &attrs, &view).await
    } else {
        Err(Error::IllegalQuery(
            "this collection's path cannot be named in the query language; use a SQL SELECT".into(),
        ))
    };
    match table {
        Ok(t) => body.push_str(&t),
        Err(e @ (Error::IllegalQuery(_) | Error::NoSuchAttribute(_) | Error::InvalidValue(_) | Error::Overflow(_))) => {
            body.push_str(&error_box(&e.public_message(), Some(&view.q)))
        }
        Err(e) => return Err(e),
    }
    body.push_str(&action_form(
        ctx,
        "addentry",
        abs,
        &here,
        "<label>New entry <input name=\"name\" required></label>",
        "Add entry",
    ));
    body.push_str("</section>");
    let entries = body.split_off(entries_start);
    body.insert_str(head_end, &entries);
    if abs != "/" {
        body.push_str(&action_form(ctx, "rmdir", abs, &parent_href(abs), "", "Remove this collection"));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_is_told_from_conditions() {
        assert!(is_sql("SELECT FILE FROM /a"));
        assert!(is_sql("  select 1"));
        assert!(!is_sql("size > 5"));
        assert!(!is_sql(""));
        assert!(queryable("/a/b_c.d-e") && !queryable("/a b"));
    }
}
