//! Sites and replicas (AMGA 2.x): `site_add`, `site_remove`, `site_list`, `replica_register`,
//! `replica_unregister`, `replica_list`. It parses the flags (`-c`, `-d`, `-l`) and prints the
//! lines; who may do what is the catalogue's (`service/replicas.rs`).

use ardacat_core::Error;
use tokio::io::AsyncWrite;

use super::Kind::{Read, Write};
use super::{Arg, Call, CommandSpec, Ctx, Outcome, own};

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    SiteAdd { site: String, server: String },
    SiteRemove(String),
    SiteList,
    ReplicaRegister { create: bool, pairs: Vec<(String, String)> },
    ReplicaUnregister { delete: bool, guid: String, site: String },
    ReplicaList { by_entry: bool, files: Vec<String> },
}

impl From<Cmd> for super::Cmd {
    fn from(c: Cmd) -> Self {
        super::Cmd::Replicas(c)
    }
}

/// Splits off a leading `flag`; any other leading `-…` word is a code-3 error.
fn flag<'a, 'l>(c: &Call<'_>, a: &'a mut [Arg<'l>], flag: &str) -> Result<(bool, &'a mut [Arg<'l>]), Error> {
    match a.first() {
        Some(f) if f == flag => Ok((true, &mut a[1..])),
        Some(f) if f.starts_with('-') => {
            Err(Error::IllegalCommand(format!("{}: unknown option '{f}' (usage: {})", c.name, c.spec.usage)))
        }
        _ => Ok((false, a)),
    }
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "site_add",
        aliases: &[],
        usage: "site_add <site> [<server>]",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [site] => Ok(Cmd::SiteAdd { site: own(site), server: String::new() }.into()),
            [site, server] => Ok(Cmd::SiteAdd { site: own(site), server: own(server) }.into()),
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "site_remove",
        aliases: &[],
        usage: "site_remove <site or id>",
        kind: Write,
        in_upload: false,
        parse: |c, a| Ok(Cmd::SiteRemove(c.one(a, "<site or id>")?).into()),
    },
    CommandSpec {
        name: "site_list",
        aliases: &[],
        usage: "site_list",
        kind: Read,
        in_upload: false,
        parse: |c, a| c.none(a, Cmd::SiteList.into()),
    },
    CommandSpec {
        name: "replica_register",
        aliases: &[],
        usage: "replica_register [-c] <guid> <site or id> [<guid> <site or id>]...",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (create, rest) = flag(c, a, "-c")?;
            if rest.is_empty() {
                return Err(c.wrong());
            }
            let pairs = c.pairs(rest, "[-c] <guid> <site or id> [<guid> <site or id>]...")?;
            Ok(Cmd::ReplicaRegister { create, pairs }.into())
        },
    },
    CommandSpec {
        name: "replica_unregister",
        aliases: &[],
        usage: "replica_unregister [-d] <guid> <site or id>",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (delete, rest) = flag(c, a, "-d")?;
            let (guid, site) = c.two(rest, "[-d] <guid> <site or id>")?;
            Ok(Cmd::ReplicaUnregister { delete, guid, site }.into())
        },
    },
    CommandSpec {
        name: "replica_list",
        aliases: &[],
        usage: "replica_list [-l] <guid or entry>...",
        kind: Read,
        in_upload: false,
        parse: |c, a| {
            let (by_entry, rest) = flag(c, a, "-l")?;
            if rest.is_empty() {
                return Err(c.wrong());
            }
            Ok(Cmd::ReplicaList { by_entry, files: rest.iter_mut().map(own).collect() }.into())
        },
    },
];

pub(super) async fn run<W: AsyncWrite + Unpin + Send>(cmd: Cmd, cx: Ctx<'_, '_, W>) -> Result<Outcome, Error> {
    let cat = &cx.shared.catalogue;
    let s = &mut cx.st.session;
    let reply = cx.reply;
    match cmd {
        Cmd::SiteAdd { site, server } => cat.site_add(s, &site, &server).await.map(|_| ())?,
        Cmd::SiteRemove(site) => cat.site_remove(s, &site).await?,
        Cmd::SiteList => {
            for site in cat.site_list(s).await? {
                // A site without a server is `id name` (no trailing space).
                let line = if site.server.is_empty() {
                    format!("{} {}", site.id, site.name)
                } else {
                    format!("{} {} {}", site.id, site.name, site.server)
                };
                reply.value(Some(&line)).await?;
            }
        }
        Cmd::ReplicaRegister { create, pairs } => cat.replica_register(s, create, &pairs).await?,
        Cmd::ReplicaUnregister { delete, guid, site } => cat.replica_unregister(s, delete, &guid, &site).await?,
        Cmd::ReplicaList { by_entry, files } => {
            for (file, sites) in cat.replica_list(s, by_entry, &files).await? {
                let mut line = file;
                for id in sites {
                    line.push(' ');
                    line.push_str(&id.to_string());
                }
                reply.value(Some(&line)).await?;
            }
        }
    }
    Ok(Outcome::Done)
}
