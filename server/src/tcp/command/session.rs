//! Session commands: `help`, `pwd`, `cd`, `whoami`, `sudo`, and the ardacat extension `wal_lsn`
//! (the database's WAL position, which a forwarding replica asks its primary after each write).

use ardacat_core::Error;
use tokio::io::AsyncWrite;

use super::Kind::{Read, Write};
use super::{CommandSpec, Ctx, Outcome};

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Help(Option<String>),
    Pwd,
    Cd(String),
    Whoami,
    Sudo(String),
    WalLsn,
}

impl From<Cmd> for super::Cmd {
    fn from(c: Cmd) -> Self {
        super::Cmd::Session(c)
    }
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "help",
        aliases: &[],
        usage: "help [<command>]",
        kind: Read,
        in_upload: false,
        parse: |_, a| Ok(Cmd::Help(a.first().map(|a| a.to_string())).into()),
    },
    CommandSpec {
        name: "pwd",
        aliases: &[],
        usage: "pwd",
        kind: Read,
        in_upload: false,
        parse: |c, a| c.none(a, Cmd::Pwd.into()),
    },
    CommandSpec {
        name: "cd",
        aliases: &[],
        usage: "cd <dir>",
        kind: Read,
        in_upload: false,
        parse: |c, a| Ok(Cmd::Cd(if a.is_empty() { "/".into() } else { c.one(a, "<dir>")? }).into()),
    },
    CommandSpec {
        name: "whoami",
        aliases: &[],
        usage: "whoami",
        kind: Read,
        in_upload: false,
        parse: |c, a| c.none(a, Cmd::Whoami.into()),
    },
    CommandSpec {
        name: "sudo",
        aliases: &[],
        usage: "sudo <user>  (root only)",
        kind: Write,
        in_upload: false,
        parse: |c, a| Ok(Cmd::Sudo(c.one(a, "<user>")?).into()),
    },
    CommandSpec {
        name: "wal_lsn",
        aliases: &[],
        usage: "wal_lsn  (PostgreSQL's WAL position: current on a primary, replayed on a standby)",
        kind: Read,
        in_upload: false,
        parse: |c, a| c.none(a, Cmd::WalLsn.into()),
    },
];

pub(super) async fn run<W: AsyncWrite + Unpin + Send>(cmd: Cmd, cx: Ctx<'_, '_, W>) -> Result<Outcome, Error> {
    let cat = &cx.shared.catalogue;
    let s = &mut cx.st.session;
    match cmd {
        Cmd::Help(topic) => {
            for spec in super::all() {
                if topic.as_deref().is_none_or(|t| t.eq_ignore_ascii_case(spec.name)) {
                    cx.reply.value(Some(spec.usage)).await?;
                }
            }
        }
        Cmd::Pwd => cx.reply.value(Some(&cat.pwd(s))).await?,
        Cmd::Cd(d) => cat.cd(s, &d).await?,
        Cmd::Whoami => cx.reply.value(Some(&s.principal.user)).await?,
        Cmd::Sudo(u) => cat.sudo(s, &u).await?,
        Cmd::WalLsn => cx.reply.value(Some(&cat.wal_lsn(s).await?)).await?,
    }
    Ok(Outcome::Done)
}
