//! Transactions and the bulk load: `transaction`, `commit`, `abort`, `upload`, `put`. While an
//! upload is open, `commit` and `abort` end it; the load itself is the catalogue's `BulkLoad`
//! (its transaction, chunking and checks), which the connection only holds between commands.

use ardacat_core::Error;
use tokio::io::AsyncWrite;

use super::Kind::Write;
use super::{CommandSpec, Ctx, Outcome, own};

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Transaction,
    Commit,
    Abort,
    Upload { dir: String, attrs: Vec<String> },
    Put { name: String, values: Vec<Option<String>> },
}

impl From<Cmd> for super::Cmd {
    fn from(c: Cmd) -> Self {
        super::Cmd::Transactions(c)
    }
}

pub(super) static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "transaction",
        aliases: &["begin"],
        usage: "transaction",
        kind: Write,
        in_upload: false,
        parse: |c, a| c.none(a, Cmd::Transaction.into()),
    },
    CommandSpec {
        name: "commit",
        aliases: &[],
        usage: "commit",
        kind: Write,
        in_upload: true,
        parse: |c, a| c.none(a, Cmd::Commit.into()),
    },
    CommandSpec {
        name: "abort",
        aliases: &["rollback"],
        usage: "abort",
        kind: Write,
        in_upload: true,
        parse: |c, a| c.none(a, Cmd::Abort.into()),
    },
    CommandSpec {
        name: "upload",
        aliases: &[],
        usage: "upload <dir> <attr>...",
        kind: Write,
        in_upload: false,
        parse: |c, a| match a {
            [dir, attrs @ ..] => Ok(Cmd::Upload { dir: own(dir), attrs: attrs.iter_mut().map(own).collect() }.into()),
            [] => Err(c.wrong()),
        },
    },
    CommandSpec {
        name: "put",
        aliases: &[],
        usage: "put <entry> <value>...",
        kind: Write,
        in_upload: true,
        parse: |c, a| match a {
            [name, ..] => Ok(Cmd::Put { name: own(name), values: c.values(a, 1) }.into()),
            [] => Err(c.wrong()),
        },
    },
];

pub(super) async fn run<W: AsyncWrite + Unpin + Send>(cmd: Cmd, cx: Ctx<'_, '_, W>) -> Result<Outcome, Error> {
    let cat = &cx.shared.catalogue;
    let st = cx.st;
    match cmd {
        Cmd::Transaction => cat.begin(&mut st.session).await?,
        Cmd::Commit => match st.upload.take() {
            Some(u) => cat.bulk_commit(&mut st.session, u).await?,
            None => cat.commit(&mut st.session).await?,
        },
        Cmd::Abort => match st.upload.take() {
            Some(u) => cat.bulk_abort(&mut st.session, u).await?,
            None => cat.abort(&mut st.session).await?,
        },
        Cmd::Upload { dir, attrs } => {
            let max = cx.shared.config.max_upload_entries;
            st.upload = Some(cat.bulk_start(&mut st.session, dir, attrs, max).await);
            return Ok(Outcome::Silent);
        }
        Cmd::Put { name, values } => {
            let Some(u) = st.upload.as_mut() else {
                return Err(Error::IllegalCommand("put outside an upload".into()));
            };
            cat.bulk_put(&mut st.session, u, name, values).await;
            return Ok(Outcome::Silent);
        }
    }
    Ok(Outcome::Done)
}
