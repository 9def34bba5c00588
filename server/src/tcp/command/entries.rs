//! Entries by name or pattern: `addentry`, `addentries`, `setattr`, `getattr`, `clearattr`,
//! `rm`. `getattr` is the hot path of the protocol (the `get` benchmark): a table lookup, the
//! attribute names copied from the line into one [`Names`], one catalogue call streaming into
//! the reply.

use ardacat_core::Error;
use ardacat_core::service::Names;
use tokio::io::AsyncWrite;

use super::Kind::{Read, Write};
use super::{CommandSpec, Ctx, Outcome, own};

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Addentry {
        path: String,
        pairs: Vec<(String, Option<String>)>,
    },
    Addentries(Vec<String>),
    Setattr {
        pattern: String,
        pairs: Vec<(String, Option<String>)>,
    },
    Getattr {
        pattern: String,
        attrs: Names,
    },
    Clearattr {
        pattern: String,
        attrs: Vec<String>,
    },
    Rm {
        pattern: String,
        condition: Option<String>,
    },
    /// `rm -rf <dir>` (also `-r`, `-R`, `-fr`, `-Rf`, `-fR`).
    RmTree(String),
}

impl From<Cmd> for super::Cmd {
    fn from(c: Cmd) -> Self {
        super::Cmd::Entries(c)
    }
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "addentry",
        aliases: &[],
        usage: "addentry <path> [<attr> <value>]...",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            if a.is_empty() {
                return Err(c.wrong());
            }
            let pairs = c.value_pairs(a, 1, "<path> [<attr> <value>]...")?;
            Ok(Cmd::Addentry { path: own(&mut a[0]), pairs }.into())
        },
    },
    CommandSpec {
        name: "addentries",
        aliases: &[],
        usage: "addentries <path>...",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            if a.is_empty() { Err(c.wrong()) } else { Ok(Cmd::Addentries(a.iter_mut().map(own).collect()).into()) }
        },
    },
    CommandSpec {
        name: "setattr",
        aliases: &[],
        usage: "setattr <pattern> <attr> <value> [<attr> <value>]...",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            if a.len() < 3 {
                return Err(c.wrong());
            }
            let pairs = c.value_pairs(a, 1, "<pattern> <attr> <value> ...")?;
            Ok(Cmd::Setattr { pattern: own(&mut a[0]), pairs }.into())
        },
    },
    CommandSpec {
        name: "getattr",
        aliases: &[],
        usage: "getattr <pattern> <attr>...",
        kind: Read,
        in_upload: false,
        parse: |c, a| match a {
            [pattern, attrs @ ..] if !attrs.is_empty() => {
                Ok(Cmd::Getattr { pattern: own(pattern), attrs: Names::from(&*attrs) }.into())
            }
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "clearattr",
        aliases: &[],
        usage: "clearattr <pattern> <attr>...",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [pattern, attrs @ ..] if !attrs.is_empty() => {
                Ok(Cmd::Clearattr { pattern: own(pattern), attrs: attrs.iter_mut().map(own).collect() }.into())
            }
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "rm",
        aliases: &[],
        usage: "rm <pattern> [<condition>] | rm -rf <dir>",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [flag, dir] if flag.starts_with('-') => {
                if RECURSIVE_FLAGS.contains(&flag.as_ref()) {
                    Ok(Cmd::RmTree(own(dir)).into())
                } else {
                    Err(Error::IllegalCommand(format!(
                        "rm: unknown option '{flag}' (use -rf; ./{flag} names an entry)"
                    )))
                }
            }
            [flag] if flag.starts_with('-') => Err(c.usage("-rf <dir>")),
            [pattern] => Ok(Cmd::Rm { pattern: own(pattern), condition: None }.into()),
            [pattern, cond] => Ok(Cmd::Rm { pattern: own(pattern), condition: Some(own(cond)) }.into()),
            _ => Err(c.wrong()),
        },
    },
];

/// The spellings of `rm`'s recursive flag. `-f` adds nothing: errors are reported either way.
const RECURSIVE_FLAGS: &[&str] = &["-rf", "-r", "-R", "-fr", "-Rf", "-fR"];

pub(super) async fn run<W: AsyncWrite + Unpin + Send>(cmd: Cmd, cx: Ctx<'_, '_, W>) -> Result<Outcome, Error> {
    let cat = &cx.shared.catalogue;
    let s = &mut cx.st.session;
    match cmd {
        Cmd::Addentry { path, pairs } => cat.addentry(s, &path, &pairs).await?,
        Cmd::Addentries(paths) => cat.addentries(s, &paths).await.map(|_| ())?,
        // A NULL value (`\N`) clears, in the same unit as the values set.
        Cmd::Setattr { pattern, pairs } => cat.set_attributes(s, &pattern, None, pairs).await.map(|_| ())?,
        Cmd::Getattr { pattern, attrs } => cat.getattr(s, &pattern, &attrs, cx.reply).await.map(|_| ())?,
        Cmd::Clearattr { pattern, attrs } => cat.clearattr(s, &pattern, &attrs).await.map(|_| ())?,
        Cmd::Rm { pattern, condition } => cat.rm(s, &pattern, condition.as_deref()).await.map(|_| ())?,
        Cmd::RmTree(dir) => cat.rm_tree(s, &dir).await.map(|_| ())?,
    }
    Ok(Outcome::Done)
}
