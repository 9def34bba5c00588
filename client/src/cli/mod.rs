//! Modes of the `ardacat` binary that need terminal or file I/O: the command shell (one-shot,
//! line input, interactive), CSV import/export and dump/restore. Must not speak wire bytes: it uses the library.

pub mod dump;
pub mod shell;
pub mod transfer;
