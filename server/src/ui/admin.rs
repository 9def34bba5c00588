//! The administration page (root): the users, the groups with their members, forms for users
//! (create, remove, password, certificate subjects) and groups (create, remove, members), and a
//! look-up of one user's groups and subjects. The forms post to `/ui/do` (`actions`); the catalogue refuses every change by
//! anyone but root, this page only saves others a form they cannot use.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use ardacat_core::Error;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;

use super::html::{csrf_field, error_box, esc};
use super::{Ctx, UiState, ctx, error_page, html_response};

const BACK: &str = "/ui/admin";

fn form(ctx: &Ctx, op: &str, fields: &str, button: &str) -> String {
    format!(
        "<form method=\"post\" action=\"/ui/do\" class=\"action\" id=\"form-{op}\">{}<input type=\"hidden\" name=\"op\" value=\"{op}\">\
         <input type=\"hidden\" name=\"back\" value=\"{BACK}\">{fields}<button type=\"submit\">{button}</button></form>",
        csrf_field(&ctx.web.csrf)
    )
}

const USER: &str = "<label>User <input name=\"user\" required></label>";
const PASSWORD: &str =
    "<label>Password <input name=\"password\" type=\"password\" autocomplete=\"new-password\" required></label>";
const GROUP: &str = "<label>Group <input name=\"group\" required></label>";

pub(super) async fn page(
    State(st): State<Arc<UiState>>,
    headers: HeaderMap,
    uri: Uri,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let mut ctx = match ctx(&st, &headers, &uri).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if !ctx.web.principal.is_root() {
        return error_page(&ctx, &Error::PermissionDenied("administration is for root".into()), "/ui/browse/");
    }
    let mut body = String::from("<h1>Administration</h1>");
    body.push_str("<section aria-labelledby=\"h-lookup\"><h2 id=\"h-lookup\">Look up a user</h2>\
                   <form method=\"get\" action=\"/ui/admin\" class=\"action\"><label>User <input name=\"user\" required></label>\
                   <button type=\"submit\">Show</button></form>");
    if let Some(user) = q.get("user").filter(|u| !u.is_empty()) {
        let cat = st.shared.catalogue.clone();
        match cat.user_listcred(&mut ctx.s, user).await {
            Ok(subjects) => {
                let groups = cat.grp_member(&mut ctx.s, Some(user)).await.unwrap_or_default();
                let _ = write!(
                    body,
                    "<dl class=\"props\" id=\"lookup\"><dt>User</dt><dd>{}</dd><dt>Groups</dt><dd>{}</dd><dt>Certificate subjects</dt><dd>",
                    esc(user),
                    esc(&groups.join(", "))
                );
                if subjects.is_empty() {
                    body.push_str("none");
                }
                for s in subjects {
                    let _ = write!(body, "<code>{}</code><br>", esc(&s));
                }
                body.push_str("</dd></dl>");
            }
            Err(e) => body.push_str(&error_box(&e.public_message(), None)),
        }
    }
    let cat = st.shared.catalogue.clone();
    body.push_str("</section><section aria-labelledby=\"h-users\"><h2 id=\"h-users\">Users</h2>");
    match cat.user_list(&mut ctx.s).await {
        Ok(users) => {
            body.push_str("<ul class=\"names\" id=\"users\">");
            for u in users {
                let _ = write!(body, "<li><a href=\"/ui/admin?user={}\">{}</a></li>", super::html::url(&u), esc(&u));
            }
            body.push_str("</ul>");
        }
        Err(e) => body.push_str(&error_box(&e.public_message(), None)),
    }
    body.push_str(&form(&ctx, "user_create", &format!("{USER}{PASSWORD}"), "Create user"));
    body.push_str(&form(&ctx, "user_passwd", &format!("{USER}{PASSWORD}"), "Set password"));
    body.push_str(&form(
        &ctx,
        "user_subject_add",
        &format!("{USER}<label>Certificate subject <input name=\"subject\" required></label>"),
        "Add subject",
    ));
    body.push_str(&form(&ctx, "user_remove", USER, "Remove user"));
    body.push_str("</section><section aria-labelledby=\"h-groups\"><h2 id=\"h-groups\">Groups</h2>");
    match cat.grp_list(&mut ctx.s).await {
        Ok(groups) => {
            body.push_str("<table class=\"groups\" id=\"groups\"><thead><tr><th scope=\"col\">Group</th><th scope=\"col\">Members</th></tr></thead><tbody>");
            for g in groups {
                let members =
                    cat.grp_show(&mut ctx.s, &g).await.map(|m| m.join(", ")).unwrap_or_else(|e| e.public_message());
                let _ = write!(body, "<tr><td>{}</td><td>{}</td></tr>", esc(&g), esc(&members));
            }
            body.push_str("</tbody></table>");
        }
        Err(e) => body.push_str(&error_box(&e.public_message(), None)),
    }
    body.push_str(&form(&ctx, "grp_create", GROUP, "Create group"));
    body.push_str(&form(&ctx, "grp_adduser", &format!("{GROUP}{USER}"), "Add member"));
    body.push_str(&form(&ctx, "grp_removeuser", &format!("{GROUP}{USER}"), "Remove member"));
    body.push_str(&form(&ctx, "grp_remove", GROUP, "Remove group"));
    body.push_str("</section>");
    html_response(StatusCode::OK, ctx.page("Administration", &body))
}
