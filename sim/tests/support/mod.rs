//! What the tests that drive `dovetail serve` as a process share: starting it on a free
//! loopback port (killed when the test ends, pass or fail) and finding a real client.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running `dovetail serve`; dropping it kills the process.
pub struct Served {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub addr: String,
    /// The kubeconfig it wrote.
    #[allow(dead_code)] // not every test file that includes this module needs it
    pub kubeconfig: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// `http://127.0.0.1:<port>`.
    #[allow(dead_code)] // not every test file that includes this module needs it
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Starts `dovetail serve --port 0 <args>` with its kubeconfig in a temporary directory named
/// after `tag`, and waits for its "serving on" line.
pub fn start(tag: &str, args: &[&str]) -> Served {
    let dir = std::env::temp_dir().join(format!("dovetail-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_dovetail"))
        .args(["serve", "--port", "0", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("dovetail serve starts");
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let addr = first.trim().strip_prefix("serving on http://").unwrap_or_else(|| panic!("{first}")).to_string();
    assert!(addr.starts_with("127.0.0.1:"), "serve binds loopback only: {first}");
    let written = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(written.contains(&format!("server: http://{addr}")), "{written}");
    Served { child, addr, kubeconfig }
}

/// The repository root.
#[allow(dead_code)] // not every test file that includes this module needs it
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The client at `installed` (from tests/clients/install.sh, relative to the repository) or
/// `fallback` on PATH, if it answers `probe`. When neither does: fails if
/// `DOVETAIL_REQUIRE_CLIENTS=1` (as `.ci/run` sets), else `None` after a loud message.
#[allow(dead_code)] // not every test file that includes this module needs it
pub fn client(what: &str, installed: &str, fallback: &str, probe: &[&str]) -> Option<PathBuf> {
    let candidates = [repo().join(installed), PathBuf::from(fallback)];
    let found = candidates.into_iter().find(|c| Command::new(c).args(probe).output().is_ok_and(|o| o.status.success()));
    if found.is_none() {
        let required = std::env::var("DOVETAIL_REQUIRE_CLIENTS").is_ok_and(|v| v == "1");
        assert!(!required, "DOVETAIL_REQUIRE_CLIENTS=1 but {what} is missing: run tests/clients/install.sh");
        eprintln!("\n\n*** SKIPPING: {what} is not installed (run tests/clients/install.sh) ***\n");
    }
    found
}
