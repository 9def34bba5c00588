//! Collections, attributes, indexes and constraints: `createdir`, `rmdir`, `dir`, `ls`,
//! `listentries`, `stat`, `addattr`, `removeattr`, `listattr`, `index_create`, `index_remove`,
//! `index_list`, `constraint_add_not_null`, `constraint_add_unique`, `constraint_add_reference`,
//! `constraint_add_check`, `constraint_drop`, `constraint_list`.

use ardacat_core::service::NewConstraint;
use ardacat_core::{Error, RowSink};
use tokio::io::AsyncWrite;

use super::Kind::{Read, Write};
use super::{Arg, Call, CommandSpec, Ctx, Outcome, own};

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Createdir { path: String, plain: bool },
    Rmdir(String),
    Dir(String),
    Ls(String),
    Listentries(String),
    Stat(String),
    Addattr { dir: String, name: String, type_name: String, indexed: bool },
    Removeattr { dir: String, name: String },
    Listattr(String),
    IndexCreate { dir: String, name: String, attrs: Vec<String> },
    IndexRemove { dir: String, name: String },
    IndexList(String),
    ConstraintAdd { dir: String, name: String, constraint: NewConstraint },
    ConstraintDrop { dir: String, name: String },
    ConstraintList(String),
}

impl From<Cmd> for super::Cmd {
    fn from(c: Cmd) -> Self {
        super::Cmd::Namespace(c)
    }
}

/// An optional path argument, `.` when absent.
fn opt_path(c: &Call<'_>, a: &mut [Arg<'_>], make: fn(String) -> Cmd) -> Result<super::Cmd, Error> {
    match a {
        [] => Ok(make(".".into()).into()),
        [p] => Ok(make(own(p)).into()),
        _ => Err(c.wrong()),
    }
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "createdir",
        aliases: &["mkdir"],
        usage: "createdir <path> [plain]",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [p] => Ok(Cmd::Createdir { path: own(p), plain: false }.into()),
            [p, plain] if plain.eq_ignore_ascii_case("plain") => {
                Ok(Cmd::Createdir { path: own(p), plain: true }.into())
            }
            _ => Err(c.usage("<path> [plain]")),
        },
    },
    CommandSpec {
        name: "rmdir",
        aliases: &[],
        usage: "rmdir <dir>",
        kind: Write,
        in_upload: false,
        parse: |c, a| Ok(Cmd::Rmdir(c.one(a, "<dir>")?).into()),
    },
    CommandSpec {
        name: "dir",
        aliases: &[],
        usage: "dir [<dir or pattern>]",
        kind: Read,
        in_upload: false,
        parse: |c, a| opt_path(c, a, Cmd::Dir),
    },
    CommandSpec {
        name: "ls",
        aliases: &[],
        usage: "ls [<path>]",
        kind: Read,
        in_upload: false,
        parse: |c, a| opt_path(c, a, Cmd::Ls),
    },
    CommandSpec {
        name: "listentries",
        aliases: &[],
        usage: "listentries [<dir>]",
        kind: Read,
        in_upload: false,
        parse: |c, a| opt_path(c, a, Cmd::Listentries),
    },
    CommandSpec {
        name: "stat",
        aliases: &[],
        usage: "stat <path or pattern>",
        kind: Read,
        in_upload: false,
        parse: |c, a| Ok(Cmd::Stat(c.one(a, "<path>")?).into()),
    },
    CommandSpec {
        name: "addattr",
        aliases: &[],
        usage: "addattr <dir> <name> <type> [indexed]",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [dir, name, t] => {
                Ok(Cmd::Addattr { dir: own(dir), name: own(name), type_name: own(t), indexed: false }.into())
            }
            [dir, name, t, ix] if ix.eq_ignore_ascii_case("indexed") => {
                Ok(Cmd::Addattr { dir: own(dir), name: own(name), type_name: own(t), indexed: true }.into())
            }
            _ => Err(c.usage("<dir> <name> <type> [indexed]")),
        },
    },
    CommandSpec {
        name: "removeattr",
        aliases: &[],
        usage: "removeattr <dir> <name>",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (dir, name) = c.two(a, "<dir> <name>")?;
            Ok(Cmd::Removeattr { dir, name }.into())
        },
    },
    CommandSpec {
        name: "listattr",
        aliases: &[],
        usage: "listattr <dir or entry>",
        kind: Read,
        in_upload: false,
        parse: |c, a| Ok(Cmd::Listattr(c.one(a, "<dir or entry>")?).into()),
    },
    CommandSpec {
        name: "index_create",
        aliases: &[],
        usage: "index_create <dir> <name> <attr> [<attr>]...",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [dir, name, attrs @ ..] if !attrs.is_empty() => {
                Ok(Cmd::IndexCreate { dir: own(dir), name: own(name), attrs: attrs.iter_mut().map(own).collect() }
                    .into())
            }
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "index_remove",
        aliases: &[],
        usage: "index_remove <dir> <name>",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (dir, name) = c.two(a, "<dir> <name>")?;
            Ok(Cmd::IndexRemove { dir, name }.into())
        },
    },
    CommandSpec {
        name: "index_list",
        aliases: &[],
        usage: "index_list <dir>",
        kind: Read,
        in_upload: false,
        parse: |c, a| Ok(Cmd::IndexList(c.one(a, "<dir>")?).into()),
    },
    CommandSpec {
        name: "constraint_add_not_null",
        aliases: &[],
        usage: "constraint_add_not_null <dir> <attr> <name>",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [dir, attr, name] => Ok(constraint_add(dir, name, NewConstraint::NotNull { attr: own(attr) })),
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "constraint_add_unique",
        aliases: &[],
        usage: "constraint_add_unique <dir> <attr> <name>",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [dir, attr, name] => Ok(constraint_add(dir, name, NewConstraint::Unique { attr: own(attr) })),
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "constraint_add_reference",
        aliases: &[],
        usage: "constraint_add_reference <dir> <attr> </dir:attr> <name>",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [dir, attr, referred, name] => {
                Ok(constraint_add(dir, name, NewConstraint::Reference { attr: own(attr), referred: own(referred) }))
            }
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "constraint_add_check",
        aliases: &[],
        usage: "constraint_add_check <dir> '<condition>' <name>",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [dir, condition, name] => Ok(constraint_add(dir, name, NewConstraint::Check { condition: own(condition) })),
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "constraint_drop",
        aliases: &[],
        usage: "constraint_drop <dir> <name>",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (dir, name) = c.two(a, "<dir> <name>")?;
            Ok(Cmd::ConstraintDrop { dir, name }.into())
        },
    },
    CommandSpec {
        name: "constraint_list",
        aliases: &[],
        usage: "constraint_list <dir>",
        kind: Read,
        in_upload: false,
        parse: |c, a| Ok(Cmd::ConstraintList(c.one(a, "<dir>")?).into()),
    },
];

fn constraint_add(dir: &str, name: &str, constraint: NewConstraint) -> super::Cmd {
    Cmd::ConstraintAdd { dir: dir.to_string(), name: name.to_string(), constraint }.into()
}

pub(super) async fn run<W: AsyncWrite + Unpin + Send>(cmd: Cmd, cx: Ctx<'_, '_, W>) -> Result<Outcome, Error> {
    let cat = &cx.shared.catalogue;
    let s = &mut cx.st.session;
    let reply = cx.reply;
    match cmd {
        Cmd::Createdir { path, plain } => cat.createdir(s, &path, plain).await.map(|_| ())?,
        Cmd::Rmdir(d) => cat.rmdir(s, &d).await?,
        Cmd::Dir(d) => cat.dir(s, &d, reply).await.map(|_| ())?,
        Cmd::Ls(d) => cat.ls(s, &d, reply).await.map(|_| ())?,
        Cmd::Listentries(d) => cat.listentries(s, &d, reply).await.map(|_| ())?,
        Cmd::Stat(p) => {
            for row in cat.stat(s, &p).await? {
                reply.row(row).await?;
            }
        }
        Cmd::Addattr { dir, name, type_name, indexed } => cat.addattr(s, &dir, &name, &type_name, indexed).await?,
        Cmd::Removeattr { dir, name } => cat.removeattr(s, &dir, &name).await?,
        Cmd::Listattr(t) => {
            for a in cat.listattr(s, &t).await? {
                reply.value(Some(&a.name)).await?;
                reply.value(Some(&a.attr_type.to_string())).await?;
            }
        }
        Cmd::IndexCreate { dir, name, attrs } => cat.index_create(s, &dir, &name, &attrs).await?,
        Cmd::IndexRemove { dir, name } => cat.index_remove(s, &dir, &name).await?,
        Cmd::IndexList(d) => {
            for ix in cat.index_list(s, &d).await? {
                reply.value(Some(&format!("{} {}", ix.name, ix.columns.join(",")))).await?;
            }
        }
        Cmd::ConstraintAdd { dir, name, constraint } => cat.constraint_add(s, &dir, &name, &constraint).await?,
        Cmd::ConstraintDrop { dir, name } => cat.constraint_drop(s, &dir, &name).await?,
        Cmd::ConstraintList(d) => {
            for k in cat.constraint_list(s, &d).await? {
                reply.value(Some(&k.line())).await?;
            }
        }
    }
    Ok(Outcome::Done)
}
