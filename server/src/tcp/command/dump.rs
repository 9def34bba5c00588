//! Dump and restore over the wire: `dump [<dir>]` answers the dump's lines, one value each
//! (`dump_count [<dir>]`, an ardacat extension, answers how many entries it would hold);
//! `restore [<dir>]`, then `restore_put <record>…` (unanswered, any number of records per
//! command), then `restore_end` (answers the numbers of records and entries) or
//! `restore_abort`. The format, the rules and the one transaction are the catalogue's
//! (`service::dump`); the connection only holds the restore between commands.

use ardacat_core::Error;
use tokio::io::AsyncWrite;

use super::Kind::{Read, Write};
use super::{CommandSpec, Ctx, Outcome, own};

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Dump(String),
    Count(String),
    Restore(Option<String>),
    Put(Vec<String>),
    End,
    Abort,
}

impl From<Cmd> for super::Cmd {
    fn from(c: Cmd) -> Self {
        super::Cmd::Dump(c)
    }
}

/// Whether a command may run while a restore is open (the others spoil it).
pub fn in_restore(name: &str) -> bool {
    matches!(name, "restore_put" | "restore_end" | "restore_abort")
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "dump",
        aliases: &[],
        usage: "dump [<dir>]",
        kind: Read,
        in_upload: false,
        parse: |c, a| match a {
            [] => Ok(Cmd::Dump("/".into()).into()),
            [d] => Ok(Cmd::Dump(own(d)).into()),
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "dump_count",
        aliases: &[],
        usage: "dump_count [<dir>]",
        kind: Read,
        in_upload: false,
        parse: |c, a| match a {
            [] => Ok(Cmd::Count("/".into()).into()),
            [d] => Ok(Cmd::Count(own(d)).into()),
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "restore",
        aliases: &[],
        usage: "restore [<dir>]",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [] => Ok(Cmd::Restore(None).into()),
            [d] => Ok(Cmd::Restore(Some(own(d))).into()),
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "restore_put",
        aliases: &[],
        usage: "restore_put <record>...",
        kind: Write,
        in_upload: false,
        parse: |c, a| if a.is_empty() { Err(c.wrong()) } else { Ok(Cmd::Put(a.iter_mut().map(own).collect()).into()) },
    },
    CommandSpec {
        name: "restore_end",
        aliases: &[],
        usage: "restore_end",
        kind: Write,
        in_upload: false,
        parse: |c, a| c.none(a, Cmd::End.into()),
    },
    CommandSpec {
        name: "restore_abort",
        aliases: &[],
        usage: "restore_abort",
        kind: Write,
        in_upload: false,
        parse: |c, a| c.none(a, Cmd::Abort.into()),
    },
];

pub(super) async fn run<W: AsyncWrite + Unpin + Send>(cmd: Cmd, cx: Ctx<'_, '_, W>) -> Result<Outcome, Error> {
    let cat = &cx.shared.catalogue;
    let st = cx.st;
    match cmd {
        Cmd::Dump(dir) => {
            cat.dump(&mut st.session, &dir, cx.reply).await?;
        }
        Cmd::Count(dir) => {
            let n = cat.dump_count(&mut st.session, &dir).await?;
            cx.reply.value(Some(&n.to_string())).await?;
        }
        Cmd::Restore(into) => {
            if st.restore.is_some() {
                return Err(Error::IllegalCommand("a restore is already open".into()));
            }
            st.restore = Some(cat.restore_start(&mut st.session, into).await);
            return Ok(Outcome::Silent);
        }
        Cmd::Put(records) => {
            let Some(r) = st.restore.as_mut() else {
                return Err(Error::IllegalCommand("restore_put outside a restore".into()));
            };
            for line in &records {
                if r.failed() {
                    break;
                }
                cat.restore_put(&mut st.session, r, line).await;
            }
            return Ok(Outcome::Silent);
        }
        Cmd::End => {
            let r = st.restore.take().ok_or_else(|| Error::IllegalCommand("restore_end outside a restore".into()))?;
            let summary = cat.restore_finish(&mut st.session, r).await?;
            cx.reply.value(Some(&summary.records.to_string())).await?;
            cx.reply.value(Some(&summary.entries.to_string())).await?;
        }
        Cmd::Abort => {
            let r = st.restore.take().ok_or_else(|| Error::IllegalCommand("restore_abort outside a restore".into()))?;
            cat.restore_abort(&mut st.session, r).await?;
        }
    }
    Ok(Outcome::Done)
}
