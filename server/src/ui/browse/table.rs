//! The entries table of a collection page: its select spec and column names (shared with the
//! export), the query-language, plain and native SQL tables with keyset or numbered paging, and the
//! `RowSink` that collects one page. Translates only: the catalogue runs and permits every query.

use super::*;

/// The entries table: a header row (sort links on query-language tables), one `<tr>` per row;
/// the first column links to the entry when `entry_dir` is set.
fn render_table(
    columns: &[String],
    rows: &[Vec<Option<String>>],
    entry_dir: Option<&str>,
    sort: Option<&View>,
) -> String {
    let mut out = String::from("<div class=\"scroll\"><table class=\"entries\" id=\"entries\"><thead><tr>");
    for c in columns {
        match sort {
            Some(v) => {
                let current = v.sort.as_deref() == Some(c.as_str());
                let next_desc = current && !v.desc;
                let aria = match (current, v.desc) {
                    (true, false) => " aria-sort=\"ascending\"",
                    (true, true) => " aria-sort=\"descending\"",
                    _ => "",
                };
                let arrow = match (current, v.desc) {
                    (true, false) => " ▲",
                    (true, true) => " ▼",
                    _ => "",
                };
                let _ = write!(
                    out,
                    "<th scope=\"col\"{aria}><a href=\"{}\" class=\"sort\">{}{arrow}</a></th>",
                    esc(&v.link(Some((c, next_desc)), None, None)),
                    esc(c)
                );
            }
            None => {
                let _ = write!(out, "<th scope=\"col\">{}</th>", esc(c));
            }
        }
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        out.push_str("<tr>");
        for (i, v) in r.iter().enumerate() {
            match (i, v, entry_dir) {
                (0, Some(name), Some(dir)) => {
                    let _ = write!(
                        out,
                        "<td><a href=\"{}\">{}</a></td>",
                        esc(&browse_href(&path::join(dir, name))),
                        esc(name)
                    );
                }
                (_, Some(v), _) => {
                    let _ = write!(out, "<td>{}</td>", esc(v));
                }
                (_, None, _) => out.push_str("<td class=\"null\">NULL</td>"),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    if rows.is_empty() {
        out.push_str("<p class=\"empty\">No entries.</p>");
    }
    out
}

/// The query spec of a collection's entries table: `FILE` and every attribute, the user's
/// condition, the chosen sort column (then the catalogue's total order).
pub(in crate::ui) fn entries_spec(abs: &str, attrs: &[ardacat_core::store::AttrDef], view: &View) -> SelectSpec {
    let mut select = vec![format!("{abs}:FILE")];
    select.extend(attrs.iter().map(|a| format!("{abs}:{}", a.name)));
    let known = |c: &str| c == "FILE" || attrs.iter().any(|a| a.name == c);
    let order_by = view
        .sort
        .as_deref()
        .filter(|c| known(c))
        .map(|c| format!("{abs}:{c} {}", if view.desc { "desc" } else { "asc" }));
    SelectSpec { select, condition: view.q.clone(), order_by }
}

pub(in crate::ui) fn column_names(spec: &SelectSpec) -> Vec<String> {
    spec.select.iter().map(|s| s.rsplit_once(':').map_or(s.as_str(), |(_, a)| a).to_string()).collect()
}

/// A page of the query-language table: keyset paging with the same signed cursor tokens as
/// SOAP `query`/`nextQuery`; the `rel="next"` link carries the next token.
pub(super) async fn query_table(
    st: &UiState,
    ctx: &mut Ctx,
    abs: &str,
    attrs: &[ardacat_core::store::AttrDef],
    view: &View,
) -> Result<String> {
    let cat = &st.shared.catalogue;
    let t = now();
    ctx.s.cwd = abs.to_string();
    let (state, after) = match &view.after {
        Some(token) => {
            let state = cat.open_token(&ctx.s, token, t, st.shared.config.soap_token_ttl_secs)?;
            if state.cwd != abs {
                return Err(Error::IllegalQuery("this page token belongs to another collection".into()));
            }
            let after = state.position();
            (state, after)
        }
        None => (cat.new_cursor(&ctx.s, &entries_spec(abs, attrs, view), t), None),
    };
    let spec = state.spec();
    let page = cat.query_page(&mut ctx.s, &spec, after, view.size).await?;
    let mut out = render_table(&column_names(&spec), &page.rows, Some(abs), Some(view));
    out.push_str("<nav class=\"pager\" aria-label=\"pages\">");
    if view.after.is_some() {
        let _ = write!(out, "<a href=\"{}\" rel=\"first\">First page</a> ", esc(&view.link(None, None, None)));
    }
    if let Some(key) = &page.next {
        let token = cat.issue_token(&cat.continue_state(&state, key, t));
        let _ = write!(
            out,
            "<a href=\"{}\" rel=\"next\" id=\"next\">Next page</a>",
            esc(&view.link(None, Some(&token), None))
        );
    }
    out.push_str("</nav>");
    Ok(out)
}

/// A collection the query language cannot name: its entries in name order, paged by number.
pub(super) async fn plain_table(
    st: &UiState,
    ctx: &mut Ctx,
    abs: &str,
    attrs: &[ardacat_core::store::AttrDef],
    view: &View,
) -> Result<String> {
    let names: Names = attrs.iter().map(|a| &a.name).collect();
    let mut sink = PageSink::new(view.page * view.size, view.size, false);
    let r = st.shared.catalogue.getattr(&mut ctx.s, abs, &names, &mut sink).await;
    sink.settle(r)?;
    let mut columns = vec!["FILE".to_string()];
    columns.extend(names.iter().map(str::to_owned));
    Ok(render_table(&columns, &sink.rows, Some(abs), None) + &numbered_pager(view, sink.more))
}

/// A native SQL SELECT: its header row, then the page's rows (paged by number).
pub(super) async fn sql_table(st: &UiState, ctx: &mut Ctx, abs: &str, view: &View) -> Result<String> {
    if !view.q.split_whitespace().next().is_some_and(|w| w.eq_ignore_ascii_case("select")) {
        return Err(Error::IllegalCommand(
            "the query field runs SELECT statements; change entries with the forms of this page".into(),
        ));
    }
    ctx.s.cwd = abs.to_string();
    let mut sink = PageSink::new(view.page * view.size, view.size, true);
    let r = st.shared.catalogue.sql(&mut ctx.s, &view.q, &mut sink).await;
    sink.settle(r)?;
    let header: Vec<String> = sink.header.iter().map(|h| h.clone().unwrap_or_default()).collect();
    Ok(render_table(&header, &sink.rows, None, None) + &numbered_pager(view, sink.more))
}

fn numbered_pager(view: &View, more: bool) -> String {
    let mut out = String::from("<nav class=\"pager\" aria-label=\"pages\">");
    if view.page > 0 {
        let _ = write!(
            out,
            "<a href=\"{}\" rel=\"prev\">Previous page</a> ",
            esc(&view.link(None, None, Some(view.page - 1)))
        );
    }
    if more {
        let _ = write!(
            out,
            "<a href=\"{}\" rel=\"next\" id=\"next\">Next page</a>",
            esc(&view.link(None, None, Some(view.page + 1)))
        );
    }
    out.push_str("</nav>");
    out
}

/// Keeps one page of a streamed result: skips `skip` rows, keeps `size`, and stops the query
/// (the store stops reading) at the row after.
struct PageSink {
    skip: usize,
    size: usize,
    /// The first row is the column header (native SQL).
    with_header: bool,
    header: Vec<Option<String>>,
    rows: Vec<Vec<Option<String>>>,
    seen: usize,
    more: bool,
}

impl PageSink {
    fn new(skip: usize, size: usize, with_header: bool) -> Self {
        PageSink { skip, size, with_header, header: Vec::new(), rows: Vec::new(), seen: 0, more: false }
    }

    /// The query's result, with this sink's own stop not counted as a failure.
    fn settle(&self, r: Result<u64>) -> Result<()> {
        match r {
            Ok(_) => Ok(()),
            Err(Error::Cancelled) if self.more => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl RowSink for PageSink {
    async fn row(&mut self, row: Vec<Option<String>>) -> Result<()> {
        if self.with_header {
            self.with_header = false;
            self.header = row;
            return Ok(());
        }
        self.seen += 1;
        if self.seen <= self.skip {
            return Ok(());
        }
        if self.rows.len() == self.size {
            self.more = true;
            return Err(Error::Cancelled);
        }
        self.rows.push(row);
        Ok(())
    }
}
