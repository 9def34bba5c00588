//! Typed helpers for the core commands (`pwd`, `createdir`, `getattr`, `selectattr`,
//! transactions, …): each builds its argument list and shapes the reply. They go through
//! `exchange`; they must not touch the connection or the framing directly.

use super::Client;
use crate::error::{ClientError, Result};
use crate::shape::group_rows;

impl Client {
    pub async fn pwd(&mut self) -> Result<String> {
        self.single(&["pwd"]).await
    }

    pub async fn whoami(&mut self) -> Result<String> {
        self.single(&["whoami"]).await
    }

    pub async fn cd(&mut self, dir: &str) -> Result<()> {
        self.execute_args(&["cd", dir]).await.map(drop)
    }

    pub async fn createdir(&mut self, path: &str) -> Result<()> {
        self.execute_args(&["createdir", path]).await.map(drop)
    }

    pub async fn rmdir(&mut self, path: &str) -> Result<()> {
        self.execute_args(&["rmdir", path]).await.map(drop)
    }

    /// `dir`: (name, `collection` | `entry`) pairs.
    pub async fn dir(&mut self, path: &str) -> Result<Vec<(String, String)>> {
        self.pairs(&["dir", path]).await
    }

    pub async fn ls(&mut self, path: &str) -> Result<Vec<String>> {
        self.names(&["ls", path]).await
    }

    pub async fn addattr(&mut self, dir: &str, name: &str, type_name: &str) -> Result<()> {
        self.execute_args(&["addattr", dir, name, type_name]).await.map(drop)
    }

    pub async fn removeattr(&mut self, dir: &str, name: &str) -> Result<()> {
        self.execute_args(&["removeattr", dir, name]).await.map(drop)
    }

    /// `listattr`: (attribute, type) pairs.
    pub async fn listattr(&mut self, path: &str) -> Result<Vec<(String, String)>> {
        self.pairs(&["listattr", path]).await
    }

    /// `addentry <path> (<attr> <value>)*`.
    pub async fn addentry<A: AsRef<str>, V: AsRef<str>>(&mut self, path: &str, pairs: &[(A, V)]) -> Result<()> {
        let mut args = vec!["addentry", path];
        for (a, v) in pairs {
            args.push(a.as_ref());
            args.push(v.as_ref());
        }
        self.execute_args(&args).await.map(drop)
    }

    pub async fn addentries<S: AsRef<str>>(&mut self, paths: &[S]) -> Result<()> {
        let mut args = vec!["addentries"];
        args.extend(paths.iter().map(AsRef::as_ref));
        self.execute_args(&args).await.map(drop)
    }

    /// `setattr <pattern> (<attr> <value>)*`.
    pub async fn setattr<A: AsRef<str>, V: AsRef<str>>(&mut self, pattern: &str, pairs: &[(A, V)]) -> Result<()> {
        let mut args = vec!["setattr", pattern];
        for (a, v) in pairs {
            args.push(a.as_ref());
            args.push(v.as_ref());
        }
        self.execute_args(&args).await.map(drop)
    }

    /// `getattr <pattern> a1..aN`: one (entry name, N values) pair per matching entry.
    pub async fn getattr<S: AsRef<str>>(
        &mut self,
        pattern: &str,
        attrs: &[S],
    ) -> Result<Vec<(String, Vec<Option<String>>)>> {
        let mut args = vec!["getattr", pattern];
        args.extend(attrs.iter().map(AsRef::as_ref));
        let values = self.values(&args).await?;
        let rows = group_rows(values, attrs.len() + 1)
            .map_err(|n| ClientError::Protocol(format!("getattr: {n} lines left over after the last entry")))?;
        Ok(rows
            .into_iter()
            .map(|mut row| {
                let name = row.remove(0).unwrap_or_default();
                (name, row)
            })
            .collect())
    }

    /// `selectattr e1..eN '<cond>'`: rows of N values.
    pub async fn selectattr<S: AsRef<str>>(
        &mut self,
        exprs: &[S],
        condition: &str,
    ) -> Result<Vec<Vec<Option<String>>>> {
        let mut args = vec!["selectattr"];
        args.extend(exprs.iter().map(AsRef::as_ref));
        args.push(condition);
        let values = self.values(&args).await?;
        group_rows(values, exprs.len())
            .map_err(|n| ClientError::Protocol(format!("selectattr: {n} lines left over after the last row")))
    }

    /// `find <pattern> '<cond>'`: matching entry names.
    pub async fn find(&mut self, pattern: &str, condition: &str) -> Result<Vec<String>> {
        self.names(&["find", pattern, condition]).await
    }

    pub async fn rm(&mut self, pattern: &str) -> Result<()> {
        self.execute_args(&["rm", pattern]).await.map(drop)
    }

    pub async fn sequence_next(&mut self, sequence: &str) -> Result<String> {
        self.single(&["sequence_next", sequence]).await
    }

    pub async fn transaction(&mut self) -> Result<()> {
        self.execute("transaction").await.map(drop)
    }

    pub async fn commit(&mut self) -> Result<()> {
        self.execute("commit").await.map(drop)
    }

    pub async fn abort(&mut self) -> Result<()> {
        self.execute("abort").await.map(drop)
    }
}
