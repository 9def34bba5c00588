//! Typed commands of the TCP protocol: one argument vector (already unquoted by
//! `ardacat_proto::tokenize`) becomes one `Command`, or a code-3 error naming what is wrong.
//! No execution here.

use ardacat_core::Error;

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Help(Option<String>),
    Pwd,
    Cd(String),
    Whoami,
    Sudo(String),
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
    Addentry { path: String, pairs: Vec<(String, String)> },
    Addentries(Vec<String>),
    Setattr { pattern: String, pairs: Vec<(String, String)> },
    Getattr { pattern: String, attrs: Vec<String> },
    Clearattr { pattern: String, attrs: Vec<String> },
    Rm { pattern: String, condition: Option<String> },
    Find { pattern: String, condition: String },
    Selectattr { exprs: Vec<String>, condition: String },
    Updateattr { pattern: String, pairs: Vec<(String, String)>, condition: String },
    Transaction,
    Commit,
    Abort,
    Upload { dir: String, attrs: Vec<String> },
    Put { name: String, values: Vec<String> },
    SequenceCreate { name: String, dir: String, increment: i64, start: i64 },
    SequenceNext(String),
    SequenceRemove(String),
    Chmod { path: String, mode: String },
    Chown { path: String, spec: String },
    AclAdd { path: String, principal: String, rights: String },
    AclRemove { path: String, principal: String },
    AclShow(String),
    UserCreate { name: String, password: String },
    UserRemove(String),
    UserPasswd { name: String, password: String },
    UserSubjectAdd { name: String, subject: String },
    UserListcred(String),
    GrpCreate(String),
    GrpRemove(String),
    GrpAdduser { group: String, user: String },
    GrpRemoveuser { group: String, user: String },
    GrpMember(Option<String>),
    Stats,
}

fn usage(cmd: &str, u: &str) -> Error {
    Error::IllegalCommand(format!("usage: {cmd} {u}"))
}

fn pairs(args: &[String], cmd: &str, u: &str) -> Result<Vec<(String, String)>, Error> {
    if !args.len().is_multiple_of(2) {
        return Err(usage(cmd, u));
    }
    Ok(args.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect())
}

impl Command {
    /// Parse a tokenized command line. Command names are case-insensitive.
    pub fn parse(args: &[String]) -> Result<Command, Error> {
        let Some((name, rest)) = args.split_first() else {
            return Err(Error::IllegalCommand("empty command".into()));
        };
        let cmd = name.to_ascii_lowercase();
        let c = cmd.as_str();
        let n = rest.len();
        let one = |u: &str| -> Result<String, Error> { if n == 1 { Ok(rest[0].clone()) } else { Err(usage(c, u)) } };
        let two = |u: &str| -> Result<(String, String), Error> {
            if n == 2 { Ok((rest[0].clone(), rest[1].clone())) } else { Err(usage(c, u)) }
        };
        let opt_path = || rest.first().cloned().unwrap_or_else(|| ".".into());
        Ok(match c {
            "help" => Command::Help(rest.first().cloned()),
            "pwd" if n == 0 => Command::Pwd,
            "cd" => Command::Cd(if n == 0 { "/".into() } else { one("<dir>")? }),
            "whoami" if n == 0 => Command::Whoami,
            "sudo" => Command::Sudo(one("<user>")?),
            "createdir" | "mkdir" => match n {
                1 => Command::Createdir { path: rest[0].clone(), plain: false },
                2 if rest[1].eq_ignore_ascii_case("plain") => Command::Createdir { path: rest[0].clone(), plain: true },
                _ => return Err(usage(c, "<path> [plain]")),
            },
            "rmdir" => Command::Rmdir(one("<dir>")?),
            "dir" if n <= 1 => Command::Dir(opt_path()),
            "ls" if n <= 1 => Command::Ls(opt_path()),
            "listentries" if n <= 1 => Command::Listentries(opt_path()),
            "stat" => Command::Stat(one("<path>")?),
            "addattr" => match n {
                3 => Command::Addattr {
                    dir: rest[0].clone(),
                    name: rest[1].clone(),
                    type_name: rest[2].clone(),
                    indexed: false,
                },
                4 if rest[3].eq_ignore_ascii_case("indexed") => Command::Addattr {
                    dir: rest[0].clone(),
                    name: rest[1].clone(),
                    type_name: rest[2].clone(),
                    indexed: true,
                },
                _ => return Err(usage(c, "<dir> <name> <type> [indexed]")),
            },
            "removeattr" => {
                let (dir, name) = two("<dir> <name>")?;
                Command::Removeattr { dir, name }
            }
            "listattr" => Command::Listattr(one("<dir or entry>")?),
            "index_create" if n >= 3 => {
                Command::IndexCreate { dir: rest[0].clone(), name: rest[1].clone(), attrs: rest[2..].to_vec() }
            }
            "index_remove" => {
                let (dir, name) = two("<dir> <name>")?;
                Command::IndexRemove { dir, name }
            }
            "index_list" => Command::IndexList(one("<dir>")?),
            "addentry" if n >= 1 => {
                Command::Addentry { path: rest[0].clone(), pairs: pairs(&rest[1..], c, "<path> [<attr> <value>]...")? }
            }
            "addentries" if n >= 1 => Command::Addentries(rest.to_vec()),
            "setattr" if n >= 3 => Command::Setattr {
                pattern: rest[0].clone(),
                pairs: pairs(&rest[1..], c, "<pattern> <attr> <value> ...")?,
            },
            "getattr" if n >= 2 => Command::Getattr { pattern: rest[0].clone(), attrs: rest[1..].to_vec() },
            "clearattr" if n >= 2 => Command::Clearattr { pattern: rest[0].clone(), attrs: rest[1..].to_vec() },
            "rm" if n == 1 || n == 2 => Command::Rm { pattern: rest[0].clone(), condition: rest.get(1).cloned() },
            "find" if n == 1 || n == 2 => {
                Command::Find { pattern: rest[0].clone(), condition: rest.get(1).cloned().unwrap_or_default() }
            }
            "selectattr" if n >= 2 => {
                Command::Selectattr { exprs: rest[..n - 1].to_vec(), condition: rest[n - 1].clone() }
            }
            "updateattr" | "updateattr_single" if n >= 4 && n.is_multiple_of(2) => Command::Updateattr {
                pattern: rest[0].clone(),
                pairs: pairs(&rest[1..n - 1], c, "<pattern> <attr> <expr> ... <condition>")?,
                condition: rest[n - 1].clone(),
            },
            "transaction" | "begin" if n == 0 => Command::Transaction,
            "commit" if n == 0 => Command::Commit,
            "abort" | "rollback" if n == 0 => Command::Abort,
            "upload" if n >= 1 => Command::Upload { dir: rest[0].clone(), attrs: rest[1..].to_vec() },
            "put" if n >= 1 => Command::Put { name: rest[0].clone(), values: rest[1..].to_vec() },
            "sequence_create" if (2..=4).contains(&n) => {
                let num = |i: usize| -> Result<i64, Error> {
                    rest.get(i)
                        .map_or(Ok(1), |s| s.parse().map_err(|_| usage(c, "<name> <dir> [<increment> [<start>]]")))
                };
                Command::SequenceCreate {
                    name: rest[0].clone(),
                    dir: rest[1].clone(),
                    increment: num(2)?,
                    start: num(3)?,
                }
            }
            "sequence_next" => Command::SequenceNext(one("<dir>/<name>")?),
            "sequence_remove" => Command::SequenceRemove(one("<dir>/<name>")?),
            "chmod" => {
                let (path, mode) = two("<path> <rwxrwxrwx>")?;
                Command::Chmod { path, mode }
            }
            "chown" => {
                let (path, spec) = two("<path> <user>[:<group>]")?;
                Command::Chown { path, spec }
            }
            "acl_add" if n == 3 => {
                Command::AclAdd { path: rest[0].clone(), principal: rest[1].clone(), rights: rest[2].clone() }
            }
            "acl_remove" => {
                let (path, principal) = two("<path> <user-or-group>")?;
                Command::AclRemove { path, principal }
            }
            "acl_show" => Command::AclShow(one("<path>")?),
            "user_create" => {
                let (name, password) = two("<name> <password>")?;
                Command::UserCreate { name, password }
            }
            "user_remove" => Command::UserRemove(one("<name>")?),
            "user_passwd" => {
                let (name, password) = two("<name> <password>")?;
                Command::UserPasswd { name, password }
            }
            "user_subject_add" => {
                let (name, subject) = two("<name> '<certificate DN>'")?;
                Command::UserSubjectAdd { name, subject }
            }
            "user_listcred" => Command::UserListcred(one("<name>")?),
            "grp_create" => Command::GrpCreate(one("<group>")?),
            "grp_remove" => Command::GrpRemove(one("<group>")?),
            "grp_adduser" => {
                let (group, user) = two("<group> <user>")?;
                Command::GrpAdduser { group, user }
            }
            "grp_removeuser" => {
                let (group, user) = two("<group> <user>")?;
                Command::GrpRemoveuser { group, user }
            }
            "grp_member" if n <= 1 => Command::GrpMember(rest.first().cloned()),
            "stats" if n == 0 => Command::Stats,
            known if HELP.iter().any(|(k, _)| *k == known) => {
                let u = HELP.iter().find(|(k, _)| *k == known).map(|(_, u)| *u).unwrap_or("");
                return Err(Error::IllegalCommand(format!("usage: {u}")));
            }
            other => return Err(Error::IllegalCommand(format!("unknown command '{other}' (try help)"))),
        })
    }

    /// Commands that change data; used for the audit log and read-only checks.
    pub fn is_write(&self) -> bool {
        !matches!(
            self,
            Command::Help(_)
                | Command::Pwd
                | Command::Cd(_)
                | Command::Whoami
                | Command::Dir(_)
                | Command::Ls(_)
                | Command::Listentries(_)
                | Command::Stat(_)
                | Command::Listattr(_)
                | Command::IndexList(_)
                | Command::Getattr { .. }
                | Command::Find { .. }
                | Command::Selectattr { .. }
                | Command::AclShow(_)
                | Command::UserListcred(_)
                | Command::GrpMember(_)
                | Command::Stats
        )
    }
}

/// Command synopses, shown by `help` and in usage errors.
pub const HELP: &[(&str, &str)] = &[
    ("help", "help [<command>]"),
    ("pwd", "pwd"),
    ("cd", "cd <dir>"),
    ("whoami", "whoami"),
    ("sudo", "sudo <user>  (root only)"),
    ("createdir", "createdir <path> [plain]"),
    ("rmdir", "rmdir <dir>"),
    ("dir", "dir [<dir or pattern>]"),
    ("ls", "ls [<path>]"),
    ("listentries", "listentries [<dir>]"),
    ("stat", "stat <path or pattern>"),
    ("addattr", "addattr <dir> <name> <type> [indexed]"),
    ("removeattr", "removeattr <dir> <name>"),
    ("listattr", "listattr <dir or entry>"),
    ("index_create", "index_create <dir> <name> <attr> [<attr>]..."),
    ("index_remove", "index_remove <dir> <name>"),
    ("index_list", "index_list <dir>"),
    ("addentry", "addentry <path> [<attr> <value>]..."),
    ("addentries", "addentries <path>..."),
    ("setattr", "setattr <pattern> <attr> <value> [<attr> <value>]..."),
    ("getattr", "getattr <pattern> <attr>..."),
    ("clearattr", "clearattr <pattern> <attr>..."),
    ("rm", "rm <pattern> [<condition>]"),
    ("find", "find <pattern> <condition>"),
    ("selectattr", "selectattr <expr>... <condition>"),
    ("updateattr", "updateattr <pattern> <attr> <expr> [<attr> <expr>]... <condition>"),
    ("transaction", "transaction"),
    ("commit", "commit"),
    ("abort", "abort"),
    ("upload", "upload <dir> <attr>..."),
    ("put", "put <entry> <value>..."),
    ("sequence_create", "sequence_create <name> <dir> [<increment> [<start>]]"),
    ("sequence_next", "sequence_next <dir>/<name>"),
    ("sequence_remove", "sequence_remove <dir>/<name>"),
    ("chmod", "chmod <collection, entry or pattern> <rwxrwxrwx>"),
    ("chown", "chown <collection, entry or pattern> <user>[:<group>]"),
    ("acl_add", "acl_add <collection or entry> <user-or-group> <rwx>"),
    ("acl_remove", "acl_remove <collection or entry> <user-or-group>"),
    ("acl_show", "acl_show <collection or entry>"),
    ("user_create", "user_create <name> <password>"),
    ("user_remove", "user_remove <name>"),
    ("user_passwd", "user_passwd <name> <password>"),
    ("user_subject_add", "user_subject_add <name> '<certificate DN>'"),
    ("user_listcred", "user_listcred <name>"),
    ("grp_create", "grp_create <group>"),
    ("grp_remove", "grp_remove <group>"),
    ("grp_adduser", "grp_adduser <group> <user>"),
    ("grp_removeuser", "grp_removeuser <group> <user>"),
    ("grp_member", "grp_member [<user>]"),
    ("stats", "stats"),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &[&str]) -> Result<Command, Error> {
        Command::parse(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn parses_core_commands() {
        assert_eq!(p(&["PWD"]).unwrap(), Command::Pwd);
        assert_eq!(p(&["createdir", "/a", "plain"]).unwrap(), Command::Createdir { path: "/a".into(), plain: true });
        assert_eq!(
            p(&["selectattr", "/a:x", "/a:y", "x>1"]).unwrap(),
            Command::Selectattr { exprs: vec!["/a:x".into(), "/a:y".into()], condition: "x>1".into() }
        );
        assert_eq!(
            p(&["updateattr", "/p", "sssin", "sssin + 1", "/p:e = /l:id"]).unwrap(),
            Command::Updateattr {
                pattern: "/p".into(),
                pairs: vec![("sssin".into(), "sssin + 1".into())],
                condition: "/p:e = /l:id".into()
            }
        );
        assert_eq!(
            p(&["INDEX_CREATE", "/d", "ix", "s0", "i0"]).unwrap(),
            Command::IndexCreate { dir: "/d".into(), name: "ix".into(), attrs: vec!["s0".into(), "i0".into()] }
        );
        assert_eq!(p(&["index_list", "/d"]).unwrap(), Command::IndexList("/d".into()));
        assert!(!Command::IndexList("/d".into()).is_write());
        assert_eq!(
            p(&["sequence_create", "s", "/p"]).unwrap(),
            Command::SequenceCreate { name: "s".into(), dir: "/p".into(), increment: 1, start: 1 }
        );
    }

    #[test]
    fn errors_are_code_3() {
        for bad in [
            &["frobnicate"][..],
            &["addattr", "/a"],
            &["addentry", "/a", "x"],
            &["pwd", "x"],
            &[],
            &["index_create", "/a", "ix"],
            &["index_remove", "/a"],
            &["index_list"],
        ] {
            let e = p(bad).unwrap_err();
            assert_eq!(e.code(), 3, "{bad:?}");
        }
        assert!(p(&["frobnicate"]).unwrap_err().to_string().contains("unknown command"));
    }
}
