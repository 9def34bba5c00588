//! Ownership, modes and ACLs: `chmod`, `chown`, `acl_add`, `acl_remove`, `acl_show`.

use ardacat_core::Error;
use tokio::io::AsyncWrite;

use super::Kind::{Read, Write};
use super::{CommandSpec, Ctx, Outcome, own};

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Chmod { path: String, mode: String },
    Chown { path: String, spec: String },
    AclAdd { path: String, principal: String, rights: String },
    AclRemove { path: String, principal: String },
    AclShow(String),
}

impl From<Cmd> for super::Cmd {
    fn from(c: Cmd) -> Self {
        super::Cmd::Acl(c)
    }
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "chmod",
        aliases: &[],
        usage: "chmod <collection, entry or pattern> <rwxrwxrwx>",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (path, mode) = c.two(a, "<path> <rwxrwxrwx>")?;
            Ok(Cmd::Chmod { path, mode }.into())
        },
    },
    CommandSpec {
        name: "chown",
        aliases: &[],
        usage: "chown <collection, entry or pattern> <user>[:<group>]",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (path, spec) = c.two(a, "<path> <user>[:<group>]")?;
            Ok(Cmd::Chown { path, spec }.into())
        },
    },
    CommandSpec {
        name: "acl_add",
        aliases: &[],
        usage: "acl_add <collection or entry> <user-or-group> <rwx>",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [path, principal, rights] => {
                Ok(Cmd::AclAdd { path: own(path), principal: own(principal), rights: own(rights) }.into())
            }
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "acl_remove",
        aliases: &[],
        usage: "acl_remove <collection or entry> <user-or-group>",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (path, principal) = c.two(a, "<path> <user-or-group>")?;
            Ok(Cmd::AclRemove { path, principal }.into())
        },
    },
    CommandSpec {
        name: "acl_show",
        aliases: &[],
        usage: "acl_show <collection or entry>",
        kind: Read,
        in_upload: false,
        parse: |c, a| Ok(Cmd::AclShow(c.one(a, "<path>")?).into()),
    },
];

pub(super) async fn run<W: AsyncWrite + Unpin + Send>(cmd: Cmd, cx: Ctx<'_, '_, W>) -> Result<Outcome, Error> {
    let cat = &cx.shared.catalogue;
    let s = &mut cx.st.session;
    match cmd {
        Cmd::Chmod { path, mode } => cat.chmod(s, &path, &mode).await?,
        Cmd::Chown { path, spec } => cat.chown(s, &path, &spec).await?,
        Cmd::AclAdd { path, principal, rights } => cat.acl_add(s, &path, &principal, &rights).await?,
        Cmd::AclRemove { path, principal } => cat.acl_remove(s, &path, &principal).await?,
        Cmd::AclShow(p) => {
            for (who, rights) in cat.acl_show(s, &p).await? {
                cx.reply.value(Some(&format!("{who} {rights}"))).await?;
            }
        }
    }
    Ok(Outcome::Done)
}
