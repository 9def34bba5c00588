//! Modes of the `ardacat` binary that need terminal or file I/O: the command shell (one-shot,
//! line input, interactive) and CSV import/export. Must not speak wire bytes: it uses the library.

pub mod shell;
pub mod transfer;
