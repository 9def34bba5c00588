//! Running catalogue commands typed by a person or read from a file: one-shot `-c`, line input
//! (`-f`, piped stdin) and the interactive `Query>` shell with history, `help`, Tab completion
//! (the library's `Completer`) and Ctrl-C cancel.
//! Prints replies through the library's `Printer`; must not parse replies or frame bytes itself.

use std::cell::RefCell;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;

use ardacat_client::{Client, ClientError, Completer, Format, Printer, Shape};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

const LOCAL_HELP: &str = "\
Client commands:
  help [topic]      this text, then the server's command list (or help on one command)
  quit | exit       leave the shell (or Ctrl-D)
  \\format NAME      output format: amga, table, csv, json
  Tab               complete a command name, or a collection or entry path (asks the server)
  Ctrl-C            cancel the running command
Everything else is sent to the server as one command line, e.g.
  pwd | cd /dir | dir /dir | listattr /dir | getattr /dir/* a b | selectattr /d:FILE /d:a '/d:a > 3'
";

/// The shell's own words, completed like the server's commands.
const LOCAL_WORDS: &[&str] = &["quit", "exit", "\\format"];

/// The line editor's helper: Tab asks the server through the shell's one connection. The
/// connection is free while a line is being edited (commands run between `readline` calls).
struct ShellHelper {
    client: Rc<RefCell<Client>>,
    completer: RefCell<Completer>,
    runtime: tokio::runtime::Handle,
}

impl rustyline::completion::Completer for ShellHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let (Ok(mut client), Ok(mut completer)) = (self.client.try_borrow_mut(), self.completer.try_borrow_mut())
        else {
            return Ok((pos, Vec::new()));
        };
        Ok(self.runtime.block_on(completer.complete(&mut client, line, pos)))
    }
}

impl rustyline::hint::Hinter for ShellHelper {
    type Hint = String;
}
impl rustyline::highlight::Highlighter for ShellHelper {}
impl rustyline::validate::Validator for ShellHelper {}
impl rustyline::Helper for ShellHelper {}

/// What a typed line means to the shell itself.
enum Local<'a> {
    Quit,
    Format(&'a str),
    Help(Option<&'a str>),
    Remote,
}

fn classify(line: &str) -> Local<'_> {
    let mut words = line.split_whitespace();
    match (words.next().unwrap_or(""), words.next()) {
        ("quit" | "exit" | "\\q", None) => Local::Quit,
        ("\\format" | ".format", Some(name)) => Local::Format(name),
        ("help", topic) => Local::Help(topic),
        _ => Local::Remote,
    }
}

/// Runs one command and prints its reply as it streams. With `interruptible`, Ctrl-C cancels it.
pub async fn run_command(
    client: &mut Client,
    line: &str,
    format: Format,
    interruptible: bool,
) -> Result<(), ClientError> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut printer = Printer::new(format, Shape::of(line), &mut out);
    let mut rows = client.start(line).await?;
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    tokio::pin!(ctrl_c);
    loop {
        // The lines come in runs of what arrived together: one step per read, not per line.
        // Without Ctrl-C handling, no `select!` at all (its random start and the extra poll
        // cost a tenth of the client's CPU on a large reply when it ran per line).
        let next = if interruptible {
            tokio::select! {
                biased;
                next = rows.next_lines() => Some(next),
                () = &mut ctrl_c => None,
            }
        } else {
            Some(rows.next_lines().await)
        };
        let run = match next {
            Some(next) => next?,
            None => {
                drop(printer);
                let _ = out.flush();
                return rows.cancel().await;
            }
        };
        let Some(run) = run else { break };
        if format == Format::Amga {
            printer.raw_lines(run.text())?;
            continue;
        }
        for raw in run.lines() {
            let value = rows.decode(raw)?;
            printer.line(raw, value)?;
        }
    }
    printer.finish()?;
    Ok(())
}

fn print_error(e: &ClientError) {
    eprintln!("Error {}: {}", e.code(), e.message());
}

fn is_broken_pipe(e: &ClientError) -> bool {
    matches!(e, ClientError::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// `-c` commands: stop at the first error, exit 1.
pub async fn one_shot(client: &mut Client, commands: &[String], format: Format) -> Result<ExitCode, ExitCode> {
    for line in commands {
        if let Err(e) = run_command(client, line, format, false).await {
            if is_broken_pipe(&e) {
                return Ok(ExitCode::SUCCESS);
            }
            print_error(&e);
            return Err(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `-f FILE` (or `-f -`).
pub async fn from_file(client: &mut Client, path: &Path, format: Format) -> Result<ExitCode, ExitCode> {
    if path == Path::new("-") {
        return from_reader(client, tokio::io::BufReader::new(tokio::io::stdin()), format).await;
    }
    match tokio::fs::File::open(path).await {
        Ok(file) => from_reader(client, tokio::io::BufReader::new(file), format).await,
        Err(e) => {
            eprintln!("ardacat: {}: {e}", path.display());
            Err(ExitCode::from(2))
        }
    }
}

/// Commands one per line; blank lines and `#` comments are skipped. Errors are printed and the
/// next line runs; the exit status is 1 if any command failed. A lost connection ends the run.
pub async fn from_reader<R: AsyncBufRead + Unpin>(
    client: &mut Client,
    reader: R,
    format: Format,
) -> Result<ExitCode, ExitCode> {
    let mut lines = reader.lines();
    let mut failed = false;
    loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                eprintln!("ardacat: reading commands: {e}");
                return Err(ExitCode::from(2));
            }
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if matches!(classify(line), Local::Quit) {
            break;
        }
        if let Err(e) = run_command(client, line, format, false).await {
            if is_broken_pipe(&e) {
                break;
            }
            print_error(&e);
            failed = true;
            if client.is_broken() {
                return Err(ExitCode::FAILURE);
            }
        }
    }
    if failed { Err(ExitCode::FAILURE) } else { Ok(ExitCode::SUCCESS) }
}

fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".ardacat_history"))
}

/// After a lost connection: resume the session if the server gave one, else log in again.
async fn recover(client: &mut Client) {
    let resumed = client.session_id().is_some();
    let result = if resumed { client.reconnect_resume().await } else { client.reconnect().await };
    match result {
        Ok(()) if resumed => eprintln!("(reconnected; session resumed)"),
        Ok(()) => eprintln!("(reconnected with a new login; the current directory is back at its default)"),
        Err(e) => eprintln!("(reconnect failed: {})", e.message()),
    }
}

/// The `Query>` shell.
pub fn interactive(
    runtime: &tokio::runtime::Runtime,
    client: Client,
    mut format: Format,
) -> Result<ExitCode, ExitCode> {
    let mut editor = match rustyline::Editor::<ShellHelper, rustyline::history::DefaultHistory>::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("ardacat: cannot start the line editor: {e}");
            return Err(ExitCode::from(2));
        }
    };
    let client = Rc::new(RefCell::new(client));
    editor.set_helper(Some(ShellHelper {
        client: client.clone(),
        completer: RefCell::new(Completer::new(LOCAL_WORDS)),
        runtime: runtime.handle().clone(),
    }));
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    {
        let client = client.borrow();
        let cfg = client.config();
        println!(
            "Connected to {}:{} (ARDA Metadata Server {}) as {}. Type `help` for help, `quit` to leave.",
            cfg.host,
            cfg.port,
            client.greeting().version(),
            cfg.login
        );
    }
    loop {
        let line = match editor.readline("Query> ") {
            Ok(line) => line,
            Err(rustyline::error::ReadlineError::Interrupted) => continue,
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("ardacat: {e}");
                break;
            }
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(line);
        let (command, command_format) = match classify(line) {
            Local::Quit => break,
            Local::Format(name) => {
                match name.parse::<Format>() {
                    Ok(f) => format = f,
                    Err(e) => eprintln!("{e}"),
                }
                continue;
            }
            Local::Help(topic) => {
                if topic.is_none() {
                    print!("{LOCAL_HELP}");
                    println!("Server commands:");
                }
                // Usage lines read best as they are, whatever the output format.
                (line, Format::Amga)
            }
            Local::Remote => (line, format),
        };
        let mut client = client.borrow_mut();
        let result = runtime.block_on(run_command(&mut client, command, command_format, true));
        if let Err(e) = result {
            print_error(&e);
            if client.is_broken() {
                runtime.block_on(recover(&mut client));
            }
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    Ok(ExitCode::SUCCESS)
}
