//! The TCP side of a bulk load: `upload` starts it, `put` lines feed it, `commit` ends it,
//! `abort` drops it.

use ardacat_core::{Error, Session};

use crate::{Cat, Store};

/// A bulk load in progress.
pub struct Upload {
    dir: String,
    attrs: Vec<String>,
    rows: Vec<(String, Vec<String>)>,
    /// The first problem; reported by `commit`, which then stores nothing of the upload.
    error: Option<Error>,
    /// The upload opened the transaction itself (it was not inside the user's `transaction`).
    owns_tx: bool,
}

/// Rows buffered before an upload outside a user transaction writes them (in its own transaction).
const UPLOAD_CHUNK: usize = 2000;

impl Upload {
    /// A command other than put/commit/abort came while the upload was open.
    pub fn refuse(&mut self, e: Error) {
        self.error.get_or_insert(e);
    }
}

pub async fn start(cat: &Cat, s: &mut Session<Store>, dir: String, attrs: Vec<String>) -> Upload {
    let owns_tx = !s.in_transaction();
    let mut u = Upload { dir, attrs, rows: Vec::new(), error: None, owns_tx };
    if owns_tx && let Err(e) = cat.begin(s).await {
        u.error = Some(e);
    }
    u
}

pub async fn put(cat: &Cat, s: &mut Session<Store>, u: &mut Upload, name: String, values: Vec<String>, max: usize) {
    if u.error.is_some() {
        return;
    }
    if values.len() != u.attrs.len() {
        u.error = Some(Error::IllegalCommand(format!(
            "put {name}: {} values for {} attributes",
            values.len(),
            u.attrs.len()
        )));
    } else if u.rows.len() >= max {
        u.error = Some(Error::LimitExceeded(format!("more than {max} entries in one upload")));
    } else {
        u.rows.push((name, values));
        if u.owns_tx && u.rows.len() >= UPLOAD_CHUNK {
            let rows = std::mem::take(&mut u.rows);
            if let Err(e) = cat.insert(s, &u.dir, &u.attrs, rows).await {
                u.error = Some(e);
            }
        }
    }
}

/// `commit` of an upload: the rest of the rows go in, then the upload's own transaction commits.
/// Any earlier failure rolls the whole upload back.
pub async fn commit(cat: &Cat, s: &mut Session<Store>, u: Upload) -> Result<(), Error> {
    let result = match u.error {
        Some(e) => Err(e),
        None if u.rows.is_empty() => Ok(()),
        None => cat.insert(s, &u.dir, &u.attrs, u.rows).await.map(|_| ()),
    };
    match (result, u.owns_tx) {
        (Ok(()), true) => cat.commit(s).await,
        (Ok(()), false) => Ok(()),
        (Err(e), true) => {
            if s.in_transaction() {
                cat.abort(s).await?;
            }
            Err(e)
        }
        (Err(e), false) => Err(e),
    }
}

pub async fn abort(cat: &Cat, s: &mut Session<Store>, u: Upload) -> Result<(), Error> {
    if u.owns_tx {
        cat.abort(s).await?;
    }
    Ok(())
}
