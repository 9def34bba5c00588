//! `ardacat-server copy --from URL --to URL`: the offline move of a whole catalogue between
//! backends (SQLite → PostgreSQL or back). Opens and migrates both databases and hands them to
//! the core's `copy_catalogue`, which holds every rule (an empty target, the settings, one
//! transaction); this module only parses the subcommand and opens databases.

use ardacat_core::ServiceConfig;
use ardacat_core::service::dump::DumpSummary;
use ardacat_core::service::dump::copy::copy_catalogue;
use ardacat_store::{Db, DbOptions, SqlStore};

use crate::StartError;

/// The arguments of `ardacat-server copy`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "ardacat-server copy",
    bin_name = "ardacat-server copy",
    about = "Copy a whole catalogue into an empty database (offline)"
)]
pub struct CopyArgs {
    /// Database URL to copy from (sqlite:PATH or postgres://…); no server may be writing to it.
    #[arg(long)]
    pub from: String,
    /// Database URL to copy into; it must hold no catalogue data yet.
    #[arg(long)]
    pub to: String,
}

/// Whether the command line is `ardacat-server copy …` (the first argument is `copy`).
pub fn is_copy(args: &[String]) -> bool {
    args.get(1).is_some_and(|a| a == "copy")
}

/// Runs the copy; the summary counts the records and entries copied.
pub async fn run(args: &CopyArgs) -> Result<DumpSummary, StartError> {
    if args.from == args.to {
        return Err(StartError::Catalogue(ardacat_core::Error::IllegalCommand(
            "--from and --to name the same database".into(),
        )));
    }
    let from = Db::open(&args.from, DbOptions::default()).await?;
    from.migrate().await?;
    let to = Db::open(&args.to, DbOptions::default()).await?;
    to.migrate().await?;
    Ok(copy_catalogue(SqlStore::new(from), SqlStore::new(to), ServiceConfig::default()).await?)
}
