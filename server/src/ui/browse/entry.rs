//! The page of one entry: its values, owner, group and mode, and the forms that change them.
//! Translates only: the catalogue decides what the caller may see and change.

use super::*;

pub(super) async fn entry_page(st: &UiState, ctx: &mut Ctx, abs: &str, props: &Props) -> Result<String> {
    let cat = st.shared.catalogue.clone();
    let here = browse_href(abs);
    let dir = path::split(abs).map(|(d, _)| d).unwrap_or("/").to_string();
    let attrs = cat.listattr(&mut ctx.s, &dir).await?;
    let names: Names = attrs.iter().map(|a| &a.name).collect();
    let mut rows: Vec<Vec<Option<String>>> = Vec::new();
    // An exact name: read the one entry (a name with wildcard characters is matched exactly by
    // comparing the row's name below).
    cat.getattr(&mut ctx.s, abs, &names, &mut rows).await?;
    let name = path::split(abs).map(|(_, n)| n).unwrap_or("");
    let values = rows
        .into_iter()
        .find(|r| r.first().and_then(|v| v.as_deref()) == Some(name))
        .ok_or_else(|| Error::NotFound(abs.to_string()))?;
    let mut body =
        format!("<h1>{}</h1><section aria-labelledby=\"h-values\"><h2 id=\"h-values\">Values</h2>", breadcrumbs(abs));
    body.push_str("<div class=\"scroll\"><table class=\"values\" id=\"values\"><thead><tr><th scope=\"col\">Attribute</th><th scope=\"col\">Type</th>\
                   <th scope=\"col\">Value</th><th scope=\"col\">Set</th><th scope=\"col\">Clear</th></tr></thead><tbody>");
    for (a, v) in attrs.iter().zip(values.iter().skip(1)) {
        let shown = match v {
            Some(v) => esc(v),
            None => "<span class=\"null\">NULL</span>".into(),
        };
        let set = action_form(
            ctx,
            "setattr",
            abs,
            &here,
            &format!(
                "<input type=\"hidden\" name=\"attr\" value=\"{0}\"><label class=\"sr\" for=\"v-{0}\">New value of {0}</label>\
                 <input id=\"v-{0}\" name=\"value\" value=\"{1}\">",
                esc(&a.name),
                esc(v.as_deref().unwrap_or(""))
            ),
            "Set",
        );
        let clear = action_form(ctx, "clearattr", abs, &here, &hidden("attr", &a.name), "Clear");
        let _ = write!(
            body,
            "<tr><th scope=\"row\">{}</th><td><code>{}</code></td><td class=\"value\">{shown}</td><td>{set}</td><td>{clear}</td></tr>",
            esc(&a.name),
            esc(&a.attr_type.to_string())
        );
    }
    body.push_str("</tbody></table></div></section>");
    let acl = cat.acl_show(&mut ctx.s, abs).await;
    body.push_str(&props_section(ctx, abs, props, &acl, &here));
    body.push_str(&action_form(ctx, "rm", abs, &browse_href(&dir), "", "Remove this entry"));
    Ok(body)
}
