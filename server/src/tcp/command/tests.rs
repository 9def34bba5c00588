use super::*;
use ardacat_core::service::Names;

fn p(s: &[&str]) -> Result<Cmd, Error> {
    Command::parse(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>()).map(|c| c.cmd)
}

fn msg(s: &[&str]) -> String {
    p(s).unwrap_err().to_string()
}

#[test]
fn parses_core_commands() {
    assert_eq!(p(&["PWD"]).unwrap(), session::Cmd::Pwd.into());
    assert_eq!(
        p(&["createdir", "/a", "plain"]).unwrap(),
        namespace::Cmd::Createdir { path: "/a".into(), plain: true }.into()
    );
    assert_eq!(
        p(&["selectattr", "/a:x", "/a:y", "x>1"]).unwrap(),
        query::Cmd::Selectattr { exprs: vec!["/a:x".into(), "/a:y".into()], condition: "x>1".into() }.into()
    );
    assert_eq!(
        p(&["updateattr", "/p", "sssin", "sssin + 1", "/p:e = /l:id"]).unwrap(),
        query::Cmd::Updateattr {
            pattern: "/p".into(),
            pairs: vec![("sssin".into(), "sssin + 1".into())],
            condition: "/p:e = /l:id".into()
        }
        .into()
    );
    assert_eq!(
        p(&["INDEX_CREATE", "/d", "ix", "s0", "i0"]).unwrap(),
        namespace::Cmd::IndexCreate { dir: "/d".into(), name: "ix".into(), attrs: vec!["s0".into(), "i0".into()] }
            .into()
    );
    assert_eq!(p(&["index_list", "/d"]).unwrap(), namespace::Cmd::IndexList("/d".into()).into());
    assert!(!Command::parse(&["index_list".to_string(), "/d".to_string()]).unwrap().is_write());
    assert_eq!(
        p(&["sequence_create", "s", "/p"]).unwrap(),
        sequences::Cmd::Create { name: "s".into(), dir: "/p".into(), increment: 1, start: 1 }.into()
    );
    assert_eq!(p(&["ls"]).unwrap(), namespace::Cmd::Ls(".".into()).into());
    assert_eq!(p(&["cd"]).unwrap(), session::Cmd::Cd("/".into()).into());
    assert_eq!(p(&["mkdir", "/x"]).unwrap(), namespace::Cmd::Createdir { path: "/x".into(), plain: false }.into());
    assert_eq!(p(&["Rollback"]).unwrap(), transactions::Cmd::Abort.into());
}

#[test]
fn parses_amga_completeness_commands() {
    assert_eq!(p(&["user_list"]).unwrap(), admin::Cmd::UserList.into());
    assert_eq!(p(&["grp_show", "g"]).unwrap(), admin::Cmd::GrpShow("g".into()).into());
    // AMGA's names are aliases of ardacat's.
    assert_eq!(p(&["grp_delete", "g"]).unwrap(), admin::Cmd::GrpRemove("g".into()).into());
    assert_eq!(
        p(&["user_password_change", "u", "pw"]).unwrap(),
        admin::Cmd::UserPasswd { name: "u".into(), password: "pw".into() }.into()
    );
    assert_eq!(
        p(&["user_subjectadd", "u", "/CN=u"]).unwrap(),
        admin::Cmd::UserSubjectAdd { name: "u".into(), subject: "/CN=u".into() }.into()
    );
    for name in ["user_subjectremove", "user_subject_remove"] {
        assert_eq!(
            p(&[name, "u", "/CN=u"]).unwrap(),
            admin::Cmd::UserSubjectRemove { name: "u".into(), subject: "/CN=u".into() }.into()
        );
    }
    assert_eq!(
        p(&["update", "/d/*", "a", "a+1", ""]).unwrap(),
        query::Cmd::Updateattr {
            pattern: "/d/*".into(),
            pairs: vec![("a".into(), "a+1".into())],
            condition: "".into()
        }
        .into()
    );
    for flag in ["-rf", "-r", "-R", "-fr", "-Rf", "-fR"] {
        assert_eq!(p(&["rm", flag, "/d"]).unwrap(), entries::Cmd::RmTree("/d".into()).into());
    }
    assert_eq!(
        p(&["rm", "/d/*", "a>1"]).unwrap(),
        entries::Cmd::Rm { pattern: "/d/*".into(), condition: Some("a>1".into()) }.into()
    );
    assert_eq!(
        p(&["replica_register", "-c", "g1", "cern", "g2", "3"]).unwrap(),
        replicas::Cmd::ReplicaRegister {
            create: true,
            pairs: vec![("g1".into(), "cern".into()), ("g2".into(), "3".into())]
        }
        .into()
    );
    assert_eq!(
        p(&["replica_unregister", "g1", "cern"]).unwrap(),
        replicas::Cmd::ReplicaUnregister { delete: false, guid: "g1".into(), site: "cern".into() }.into()
    );
    assert_eq!(
        p(&["replica_list", "-l", "/d/a", "/d/b"]).unwrap(),
        replicas::Cmd::ReplicaList { by_entry: true, files: vec!["/d/a".into(), "/d/b".into()] }.into()
    );
    assert_eq!(
        p(&["site_add", "cern"]).unwrap(),
        replicas::Cmd::SiteAdd { site: "cern".into(), server: String::new() }.into()
    );
    for bad in [
        &["rm", "-x", "/d"][..],
        &["rm", "-rf"],
        &["user_list", "x"],
        &["grp_show"],
        &["site_add"],
        &["site_add", "a", "b", "c"],
        &["site_list", "x"],
        &["replica_register", "-c"],
        &["replica_register", "g"],
        &["replica_register", "-x", "g", "s"],
        &["replica_unregister", "-d", "g"],
        &["replica_list"],
        &["replica_list", "-l"],
    ] {
        assert_eq!(p(bad).unwrap_err().code(), 3, "{bad:?}");
    }
    assert_eq!(msg(&["rm", "-x", "/d"]), "rm: unknown option '-x' (use -rf; ./-x names an entry)");
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
    assert!(msg(&["frobnicate"]).contains("unknown command"));
}

/// The error texts are part of the protocol as clients see it.
#[test]
fn error_texts() {
    assert_eq!(msg(&["pwd", "x"]), "usage: pwd");
    assert_eq!(msg(&["stat"]), "usage: stat <path>");
    assert_eq!(msg(&["MKDIR"]), "usage: mkdir <path> [plain]");
    assert_eq!(msg(&["begin", "x"]), "unknown command 'begin' (try help)");
    assert_eq!(
        msg(&["updateattr", "/a", "x"]),
        "usage: updateattr <pattern> <attr> <expr> [<attr> <expr>]... <condition>"
    );
    assert_eq!(msg(&["addentry", "/a", "x"]), "usage: addentry <path> [<attr> <value>]...");
    assert_eq!(
        msg(&["sequence_create", "s", "/p", "x"]),
        "usage: sequence_create <name> <dir> [<increment> [<start>]]"
    );
    assert_eq!(msg(&["dump", "/a", "/b"]), "usage: dump [<dir>]");
    assert_eq!(msg(&["restore_put"]), "usage: restore_put <record>...");
    assert_eq!(msg(&["restore_end", "x"]), "usage: restore_end");
    assert_eq!(msg(&["Frob"]), "unknown command 'frob' (try help)");
    assert_eq!(msg(&[]), "empty command");
}

#[test]
fn table_is_complete_and_ordered() {
    let names: Vec<&str> = all().map(|s| s.name).collect();
    assert_eq!(names.len(), 74);
    assert_eq!(&names[..7], ["help", "pwd", "cd", "whoami", "sudo", "wal_lsn", "createdir"]);
    assert_eq!(names.last(), Some(&"restore_abort"));
    assert_eq!(&names[68..], ["dump", "dump_count", "restore", "restore_put", "restore_end", "restore_abort"]);
    for spec in all() {
        assert_eq!(spec.name, spec.name.to_ascii_lowercase());
        assert!(spec.usage.starts_with(spec.name), "{}", spec.name);
        assert!(std::ptr::eq(lookup(&spec.name.to_ascii_uppercase()).unwrap(), spec));
    }
    assert_eq!(label("GETATTR"), "getattr");
    assert_eq!(label("mkdir"), "other");
    assert_eq!(label("nope"), "other");
    let in_upload: Vec<&str> = all().filter(|s| s.in_upload).map(|s| s.name).collect();
    assert_eq!(in_upload, ["commit", "abort", "put"]);
}

/// The parsers take the arguments they keep out of the line instead of copying them: every
/// argument lands in its place, a `\N` value stays NULL, and one taken where a name goes is still
/// an error.
#[test]
fn taken_arguments_land_where_they_belong() {
    let attrs: Vec<String> = (0..60).map(|i| format!("a{i}")).collect();
    let mut line = vec!["getattr".to_string(), "/c/e1".to_string()];
    line.extend(attrs.iter().cloned());
    assert_eq!(
        Command::parse(&line).unwrap().cmd,
        entries::Cmd::Getattr { pattern: "/c/e1".into(), attrs: Names::from(attrs.as_slice()) }.into()
    );
    // Quoted arguments are built by the tokenizer, bare ones borrow the line: both land alike.
    let mut args = ardacat_proto::tokenize_args("getattr '/c/e 1' a 'b c' d'e'").unwrap();
    assert_eq!(
        Command::parse_escaped(&mut args, &[]).unwrap().cmd,
        entries::Cmd::Getattr { pattern: "/c/e 1".into(), attrs: Names::from_iter(["a", "b c", "de"]) }.into()
    );
    assert_eq!(
        p(&["clearattr", "/c/*", "x", "y"]).unwrap(),
        entries::Cmd::Clearattr { pattern: "/c/*".into(), attrs: vec!["x".into(), "y".into()] }.into()
    );
    assert_eq!(p(&["addentries", "a", "b"]).unwrap(), entries::Cmd::Addentries(vec!["a".into(), "b".into()]).into());
    assert_eq!(
        p(&["setattr", "/c/e", "x", "1", "y", "two"]).unwrap(),
        entries::Cmd::Setattr {
            pattern: "/c/e".into(),
            pairs: vec![("x".into(), Some("1".into())), ("y".into(), Some("two".into()))]
        }
        .into()
    );
    assert_eq!(
        p(&["replica_unregister", "-d", "g", "s"]).unwrap(),
        replicas::Cmd::ReplicaUnregister { delete: true, guid: "g".into(), site: "s".into() }.into()
    );
    assert_eq!(
        p(&["replica_register", "g1", "s1", "g2", "s2"]).unwrap(),
        replicas::Cmd::ReplicaRegister {
            create: false,
            pairs: vec![("g1".into(), "s1".into()), ("g2".into(), "s2".into())]
        }
        .into()
    );
    // With `escape`: the NULL value stays NULL, its neighbours keep their texts.
    let mut escaped: Vec<Arg<'_>> = ["addentry", "/c/e", "x", "", "y", "v"].map(Arg::Borrowed).to_vec();
    let nulls = [false, false, false, true, false, false];
    assert_eq!(
        Command::parse_escaped(&mut escaped, &nulls).unwrap().cmd,
        entries::Cmd::Addentry { path: "/c/e".into(), pairs: vec![("x".into(), None), ("y".into(), Some("v".into()))] }
            .into()
    );
    // A NULL where an attribute name goes is refused.
    let mut escaped: Vec<Arg<'_>> = ["addentry", "/c/e", "", "1"].map(Arg::Borrowed).to_vec();
    let e = Command::parse_escaped(&mut escaped, &[false, false, true, false]).unwrap_err();
    assert_eq!(e.code(), 3, "{e}");
}
