//! Queries in the condition language: `find`, `selectattr`, `updateattr` (also AMGA's
//! `update`, the original client's method; SQL `UPDATE … SET` never reaches this table:
//! `tcp/conn.rs` routes it to native SQL by its shape).

use ardacat_core::Error;
use ardacat_core::service::SelectSpec;
use tokio::io::AsyncWrite;

use super::Kind::{Read, Write};
use super::{CommandSpec, Ctx, Outcome, own};

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Find { pattern: String, condition: String },
    Selectattr { exprs: Vec<String>, condition: String },
    Updateattr { pattern: String, pairs: Vec<(String, String)>, condition: String },
}

impl From<Cmd> for super::Cmd {
    fn from(c: Cmd) -> Self {
        super::Cmd::Query(c)
    }
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "find",
        aliases: &[],
        usage: "find <pattern> <condition>",
        kind: Read,
        in_upload: false,
        parse: |c, a| match a {
            [pattern] => Ok(Cmd::Find { pattern: own(pattern), condition: String::new() }.into()),
            [pattern, cond] => Ok(Cmd::Find { pattern: own(pattern), condition: own(cond) }.into()),
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "selectattr",
        aliases: &[],
        usage: "selectattr <expr>... <condition>",
        kind: Read,
        in_upload: false,
        parse: |c, a| match a {
            [exprs @ .., cond] if !exprs.is_empty() => {
                Ok(Cmd::Selectattr { exprs: exprs.iter_mut().map(own).collect(), condition: own(cond) }.into())
            }
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "updateattr",
        aliases: &["updateattr_single", "update"],
        usage: "updateattr <pattern> <attr> <expr> [<attr> <expr>]... <condition>",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let n = a.len();
            match a {
                [pattern, pairs @ .., cond] if n >= 4 && n.is_multiple_of(2) => {
                    let pairs = c.pairs(pairs, "<pattern> <attr> <expr> ... <condition>")?;
                    Ok(Cmd::Updateattr { pattern: own(pattern), pairs, condition: own(cond) }.into())
                }
                _ => Err(c.wrong()),
            }
        },
    },
];

pub(super) async fn run<W: AsyncWrite + Unpin + Send>(cmd: Cmd, cx: Ctx<'_, '_, W>) -> Result<Outcome, Error> {
    let cat = &cx.shared.catalogue;
    let s = &mut cx.st.session;
    match cmd {
        Cmd::Find { pattern, condition } => cat.find(s, &pattern, &condition, cx.reply).await.map(|_| ())?,
        Cmd::Selectattr { exprs, condition } => {
            let spec = SelectSpec { select: exprs, condition, order_by: None };
            cat.selectattr(s, &spec, cx.reply).await.map(|_| ())?
        }
        Cmd::Updateattr { pattern, pairs, condition } => {
            cat.updateattr(s, &pattern, &pairs, &condition).await.map(|_| ())?
        }
    }
    Ok(Outcome::Done)
}
