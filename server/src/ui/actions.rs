//! Every change made from the web interface: one POST to `/ui/do` with the session's CSRF token,
//! an `op` and its fields, mapped to one catalogue call. Removals (`rm`, `rmdir`, `removeattr`,
//! `acl_remove`, `user_remove`, `grp_remove`, `grp_removeuser`) first answer a confirmation page
//! whose form repeats the request with `confirmed=yes`. It translates only: permissions and
//! validation are the catalogue's, and a refused change changes nothing.

use std::collections::HashMap;
use std::sync::Arc;

use ardacat_core::{Error, Result, path};
use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;

use super::html::{self, csrf_field, esc};
use super::{Ctx, UiState, csrf_refusal, ctx, error_page, html_response, redirect, safe_back};

/// Operations that remove something, and what the confirmation page calls it.
fn removal(op: &str, f: &Fields) -> Option<String> {
    Some(match op {
        "rm" => format!("the entry {}", f.get("path")),
        "rmdir" => format!("the collection {} (it must be empty)", f.get("path")),
        "removeattr" => format!("the attribute {} of {} and its values", f.get("name"), f.get("path")),
        "acl_remove" => format!("the ACL entry of {} on {}", f.get("principal"), f.get("path")),
        "user_remove" => format!("the user {}", f.get("user")),
        "grp_remove" => format!("the group {}", f.get("group")),
        "grp_removeuser" => format!("{} from the group {}", f.get("user"), f.get("group")),
        _ => return None,
    })
}

struct Fields(HashMap<String, String>);

impl Fields {
    fn get(&self, k: &str) -> &str {
        self.0.get(k).map(String::as_str).unwrap_or("")
    }
}

/// A query-language string literal (`"…"` with `\"` and `\\`).
fn literal(v: &str) -> String {
    format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
}

pub(super) async fn submit(
    State(st): State<Arc<UiState>>,
    headers: HeaderMap,
    uri: Uri,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let mut ctx = match ctx(&st, &headers, &uri).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if let Some(r) = csrf_refusal(&ctx, &form) {
        return r;
    }
    let f = Fields(form);
    let op = f.get("op").to_string();
    let back = safe_back(Some(f.get("back")));
    if let Some(what) = removal(&op, &f)
        && f.get("confirmed") != "yes"
    {
        return confirm_page(&ctx, &f, &what, &back);
    }
    match run(&st, &mut ctx, &op, &f).await {
        Ok(()) => {
            // A new password or a removed account ends the user's other web sessions.
            match op.as_str() {
                "user_passwd" => st.sessions.close_user(f.get("user"), Some(&ctx.id)),
                "user_remove" => st.sessions.close_user(f.get("user"), None),
                _ => {}
            }
            redirect(&back)
        }
        Err(e) => error_page(&ctx, &e, &back),
    }
}

fn confirm_page(ctx: &Ctx, f: &Fields, what: &str, back: &str) -> Response {
    let mut hidden = String::new();
    for (k, v) in &f.0 {
        if k != "csrf" && k != "confirmed" {
            hidden.push_str(&html::hidden(k, v));
        }
    }
    let body = format!(
        "<h1>Confirm removal</h1><p>Remove {}?</p><form method=\"post\" action=\"/ui/do\" class=\"confirm\">{}{hidden}\
         <input type=\"hidden\" name=\"confirmed\" value=\"yes\"><button type=\"submit\" id=\"confirm\" class=\"danger\">Remove</button> \
         <a href=\"{}\">Cancel</a></form>",
        esc(what),
        csrf_field(&ctx.web.csrf),
        esc(back)
    );
    html_response(StatusCode::OK, ctx.page("Confirm removal", &body))
}

/// One catalogue call per operation.
async fn run(st: &UiState, ctx: &mut Ctx, op: &str, f: &Fields) -> Result<()> {
    let cat = &st.shared.catalogue;
    let s = &mut ctx.s;
    let target = f.get("path");
    // An entry whose name holds a wildcard character is addressed by an exact-name condition,
    // so that a change never reaches the entries the pattern would match.
    let exact = |target: &str| -> Option<(String, String)> {
        let (dir, name) = path::split(target)?;
        path::has_wildcard(name).then(|| (dir.to_string(), format!("FILE = {}", literal(name))))
    };
    match op {
        "addentry" => cat.addentry(s, &path::join(target, f.get("name")), &[]).await,
        "rm" => match exact(target) {
            Some((dir, cond)) => match cat.rm(s, &dir, Some(&cond)).await? {
                0 => Err(Error::NotFound(target.to_string())),
                _ => Ok(()),
            },
            None => cat.rm(s, target, None).await.map(|_| ()),
        },
        "setattr" => {
            let (attr, value) = (f.get("attr").to_string(), f.get("value").to_string());
            match exact(target) {
                Some((dir, cond)) => cat.updateattr(s, &dir, &[(attr, literal(&value))], &cond).await.map(|_| ()),
                None => cat.setattr(s, target, &[(attr, value)]).await.map(|_| ()),
            }
        }
        "clearattr" => {
            let attr = f.get("attr").to_string();
            match exact(target) {
                Some((dir, cond)) => cat.updateattr(s, &dir, &[(attr, "null".into())], &cond).await.map(|_| ()),
                None => cat.clearattr(s, target, &[attr]).await.map(|_| ()),
            }
        }
        "addattr" => cat.addattr(s, target, f.get("name"), f.get("type"), f.get("indexed") == "1").await,
        "removeattr" => cat.removeattr(s, target, f.get("name")).await,
        "createdir" => cat.createdir(s, &path::join(target, f.get("name")), f.get("plain") == "1").await.map(|_| ()),
        "rmdir" => cat.rmdir(s, target).await,
        "chmod" => cat.chmod(s, target, f.get("mode")).await,
        "acl_add" => cat.acl_add(s, target, f.get("principal"), f.get("rights")).await,
        "acl_remove" => cat.acl_remove(s, target, f.get("principal")).await,
        "user_create" => cat.user_create(s, f.get("user"), f.get("password")).await,
        "user_remove" => cat.user_remove(s, f.get("user")).await,
        "user_passwd" => cat.user_passwd(s, f.get("user"), f.get("password")).await,
        "user_subject_add" => cat.user_subject_add(s, f.get("user"), f.get("subject")).await,
        "grp_create" => cat.grp_create(s, f.get("group")).await,
        "grp_remove" => cat.grp_remove(s, f.get("group")).await,
        "grp_adduser" => cat.grp_adduser(s, f.get("group"), f.get("user")).await,
        "grp_removeuser" => cat.grp_removeuser(s, f.get("group"), f.get("user")).await,
        other => Err(Error::IllegalCommand(format!("unknown operation '{other}'"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_quoted() {
        assert_eq!(literal("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }
}
