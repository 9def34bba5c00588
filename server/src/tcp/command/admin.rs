//! Users, groups and the server's counters: `user_create`, `user_remove`, `user_passwd`,
//! `user_subject_add`, `user_subject_remove`, `user_listcred`, `user_list`, `grp_create`,
//! `grp_remove`, `grp_adduser`, `grp_removeuser`, `grp_member`, `grp_list`, `grp_show`,
//! `stats`, and the service-account privilege of forwarding replicas, `user_may_sudo`. AMGA's own names are aliases (`user_password_change`, `user_subjectadd`,
//! `user_subjectremove`, `grp_delete`).

use ardacat_core::Error;
use tokio::io::AsyncWrite;

use super::Kind::{Read, Write};
use super::{CommandSpec, Ctx, Outcome, own};

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    UserCreate { name: String, password: String },
    UserRemove(String),
    UserPasswd { name: String, password: String },
    UserMaySudo { name: String, on: bool },
    UserSubjectAdd { name: String, subject: String },
    UserSubjectRemove { name: String, subject: String },
    UserListcred(String),
    UserList,
    GrpCreate(String),
    GrpRemove(String),
    GrpAdduser { group: String, user: String },
    GrpRemoveuser { group: String, user: String },
    GrpMember(Option<String>),
    GrpList,
    GrpShow(String),
    Stats,
}

impl From<Cmd> for super::Cmd {
    fn from(c: Cmd) -> Self {
        super::Cmd::Admin(c)
    }
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "user_create",
        aliases: &[],
        usage: "user_create <name> <password>",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (name, password) = c.two(a, "<name> <password>")?;
            Ok(Cmd::UserCreate { name, password }.into())
        },
    },
    CommandSpec {
        name: "user_remove",
        aliases: &[],
        usage: "user_remove <name>",
        kind: Write,
        in_upload: false,
        parse: |c, a| Ok(Cmd::UserRemove(c.one(a, "<name>")?).into()),
    },
    CommandSpec {
        name: "user_passwd",
        aliases: &["user_password_change"],
        usage: "user_passwd <name> <password>",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (name, password) = c.two(a, "<name> <password>")?;
            Ok(Cmd::UserPasswd { name, password }.into())
        },
    },
    CommandSpec {
        name: "user_may_sudo",
        aliases: &[],
        usage: "user_may_sudo <name> on|off",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (name, switch) = c.two(a, "<name> on|off")?;
            let on = match switch.to_ascii_lowercase().as_str() {
                "on" => true,
                "off" => false,
                _ => return Err(c.usage("<name> on|off")),
            };
            Ok(Cmd::UserMaySudo { name, on }.into())
        },
    },
    CommandSpec {
        name: "user_subject_add",
        aliases: &["user_subjectadd"],
        usage: "user_subject_add <name> '<certificate DN>'",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (name, subject) = c.two(a, "<name> '<certificate DN>'")?;
            Ok(Cmd::UserSubjectAdd { name, subject }.into())
        },
    },
    CommandSpec {
        name: "user_subject_remove",
        aliases: &["user_subjectremove"],
        usage: "user_subject_remove <name> '<certificate DN>'",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (name, subject) = c.two(a, "<name> '<certificate DN>'")?;
            Ok(Cmd::UserSubjectRemove { name, subject }.into())
        },
    },
    CommandSpec {
        name: "user_listcred",
        aliases: &[],
        usage: "user_listcred <name>",
        kind: Read,
        in_upload: false,
        parse: |c, a| Ok(Cmd::UserListcred(c.one(a, "<name>")?).into()),
    },
    CommandSpec {
        name: "user_list",
        aliases: &[],
        usage: "user_list",
        kind: Read,
        in_upload: false,
        parse: |c, a| c.none(a, Cmd::UserList.into()),
    },
    CommandSpec {
        name: "grp_create",
        aliases: &[],
        usage: "grp_create <group>",
        kind: Write,
        in_upload: false,
        parse: |c, a| Ok(Cmd::GrpCreate(c.one(a, "<group>")?).into()),
    },
    CommandSpec {
        name: "grp_remove",
        aliases: &["grp_delete"],
        usage: "grp_remove <group>",
        kind: Write,
        in_upload: false,
        parse: |c, a| Ok(Cmd::GrpRemove(c.one(a, "<group>")?).into()),
    },
    CommandSpec {
        name: "grp_adduser",
        aliases: &[],
        usage: "grp_adduser <group> <user>",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (group, user) = c.two(a, "<group> <user>")?;
            Ok(Cmd::GrpAdduser { group, user }.into())
        },
    },
    CommandSpec {
        name: "grp_removeuser",
        aliases: &[],
        usage: "grp_removeuser <group> <user>",
        kind: Write,
        in_upload: false,
        parse: |c, a| {
            let (group, user) = c.two(a, "<group> <user>")?;
            Ok(Cmd::GrpRemoveuser { group, user }.into())
        },
    },
    CommandSpec {
        name: "grp_member",
        aliases: &[],
        usage: "grp_member [<user>]",
        kind: Read,
        in_upload: false,
        parse: |c, a| match a {
            [] => Ok(Cmd::GrpMember(None).into()),
            [u] => Ok(Cmd::GrpMember(Some(own(u))).into()),
            _ => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "grp_list",
        aliases: &[],
        usage: "grp_list",
        kind: Read,
        in_upload: false,
        parse: |c, a| c.none(a, Cmd::GrpList.into()),
    },
    CommandSpec {
        name: "grp_show",
        aliases: &[],
        usage: "grp_show <group>",
        kind: Read,
        in_upload: false,
        parse: |c, a| Ok(Cmd::GrpShow(c.one(a, "<group>")?).into()),
    },
    CommandSpec {
        name: "stats",
        aliases: &[],
        usage: "stats",
        kind: Read,
        in_upload: false,
        parse: |c, a| c.none(a, Cmd::Stats.into()),
    },
];

pub(super) async fn run<W: AsyncWrite + Unpin + Send>(cmd: Cmd, cx: Ctx<'_, '_, W>) -> Result<Outcome, Error> {
    let shared = cx.shared;
    let cat = &shared.catalogue;
    let s = &mut cx.st.session;
    let reply = cx.reply;
    match cmd {
        Cmd::UserCreate { name, password } => cat.user_create(s, &name, &password).await?,
        Cmd::UserRemove(name) => cat.user_remove(s, &name).await?,
        Cmd::UserPasswd { name, password } => cat.user_passwd(s, &name, &password).await?,
        Cmd::UserMaySudo { name, on } => cat.user_may_sudo(s, &name, on).await?,
        Cmd::UserSubjectAdd { name, subject } => cat.user_subject_add(s, &name, &subject).await?,
        Cmd::UserSubjectRemove { name, subject } => cat.user_subject_remove(s, &name, &subject).await?,
        Cmd::UserListcred(name) => {
            for dn in cat.user_listcred(s, &name).await? {
                reply.value(Some(&dn)).await?;
            }
        }
        Cmd::UserList => {
            for name in cat.user_list(s).await? {
                reply.value(Some(&name)).await?;
            }
        }
        Cmd::GrpCreate(g) => cat.grp_create(s, &g).await?,
        Cmd::GrpRemove(g) => cat.grp_remove(s, &g).await?,
        Cmd::GrpAdduser { group, user } => cat.grp_adduser(s, &group, &user).await?,
        Cmd::GrpRemoveuser { group, user } => cat.grp_removeuser(s, &group, &user).await?,
        Cmd::GrpMember(user) => {
            let groups = cat.grp_member(s, user.as_deref()).await?;
            reply.value(Some(&groups.join(","))).await?
        }
        Cmd::GrpList => {
            for name in cat.grp_list(s).await? {
                reply.value(Some(&name)).await?;
            }
        }
        Cmd::GrpShow(g) => {
            for name in cat.grp_show(s, &g).await? {
                reply.value(Some(&name)).await?;
            }
        }
        Cmd::Stats => {
            for c in shared.counters() {
                reply.value(Some(&format!("{} {}", c.key(), c.value))).await?;
            }
            for (k, v) in shared.metrics.summary() {
                reply.value(Some(&format!("{k} {v}"))).await?;
            }
        }
    }
    Ok(Outcome::Done)
}
