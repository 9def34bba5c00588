//! Sequences: `sequence_create`, `sequence_next`, `sequence_remove`.

use ardacat_core::Error;
use tokio::io::AsyncWrite;

use super::Kind::Write;
use super::{CommandSpec, Ctx, Outcome, own};

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Create { name: String, dir: String, increment: i64, start: i64 },
    Next(String),
    Remove(String),
}

impl From<Cmd> for super::Cmd {
    fn from(c: Cmd) -> Self {
        super::Cmd::Sequences(c)
    }
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "sequence_create",
        aliases: &[],
        usage: "sequence_create <name> <dir> [<increment> [<start>]]",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            if !(2..=4).contains(&a.len()) {
                return Err(c.wrong());
            }
            let num = |i: usize| -> Result<i64, Error> {
                a.get(i).map_or(Ok(1), |s| s.parse().map_err(|_| c.usage("<name> <dir> [<increment> [<start>]]")))
            };
            let (increment, start) = (num(2)?, num(3)?);
            Ok(Cmd::Create { name: own(&mut a[0]), dir: own(&mut a[1]), increment, start }.into())
        },
    },
    CommandSpec {
        name: "sequence_next",
        aliases: &[],
        usage: "sequence_next <dir>/<name>",
        kind: Write,
        in_upload: false,
        parse: |c, a| Ok(Cmd::Next(c.one(a, "<dir>/<name>")?).into()),
    },
    CommandSpec {
        name: "sequence_remove",
        aliases: &[],
        usage: "sequence_remove <dir>/<name>",
        kind: Write,
        in_upload: false,
        parse: |c, a| Ok(Cmd::Remove(c.one(a, "<dir>/<name>")?).into()),
    },
];

pub(super) async fn run<W: AsyncWrite + Unpin + Send>(cmd: Cmd, cx: Ctx<'_, '_, W>) -> Result<Outcome, Error> {
    let cat = &cx.shared.catalogue;
    let s = &mut cx.st.session;
    match cmd {
        Cmd::Create { name, dir, increment, start } => cat.sequence_create(s, &name, &dir, increment, start).await?,
        Cmd::Next(seq) => cx.reply.value(Some(&cat.sequence_next(s, &seq).await?.to_string())).await?,
        Cmd::Remove(seq) => cat.sequence_remove(s, &seq).await?,
    }
    Ok(Outcome::Done)
}
