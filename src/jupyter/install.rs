//! `ixmap kernel install`: writes the kernelspec (`kernel.json` and the two logos from the
//! repository's `kernel/` folder, built into the binary) so that `jupyter kernelspec list`
//! shows `ixmap`, with `argv[0]` the absolute path of the running binary.
//!
//! ```text
//! --user        $JUPYTER_DATA_DIR, else the user's Jupyter data folder (default)
//! --sys-prefix  the active virtualenv or conda env ($VIRTUAL_ENV, $CONDA_PREFIX, or
//!               python3's sys.prefix)/share/jupyter
//! --prefix DIR  DIR/share/jupyter
//!               ... then kernels/ixmap/{kernel.json, logo-32x32.png, logo-64x64.png}
//! ```

use serde_json::Value as Json;
use std::path::{Path, PathBuf};

const KERNEL_JSON: &str = include_str!("../../kernel/kernel.json");
const LOGO_32: &[u8] = include_bytes!("../../kernel/logo-32x32.png");
const LOGO_64: &[u8] = include_bytes!("../../kernel/logo-64x64.png");

/// Where to install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    User,
    SysPrefix,
    Prefix(PathBuf),
}

/// The user's Jupyter data folder, as jupyter_core computes it.
fn user_data_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("JUPYTER_DATA_DIR") {
        return Ok(PathBuf::from(d));
    }
    let home = dirs::home_dir().ok_or("cannot find the home folder; use --prefix DIR")?;
    if cfg!(target_os = "macos") {
        return Ok(home.join("Library/Jupyter"));
    }
    if cfg!(windows) {
        let appdata = std::env::var_os("APPDATA").ok_or("APPDATA is not set; use --prefix DIR")?;
        return Ok(PathBuf::from(appdata).join("jupyter"));
    }
    match std::env::var_os("XDG_DATA_HOME") {
        Some(x) if !x.is_empty() => Ok(PathBuf::from(x).join("jupyter")),
        _ => Ok(home.join(".local/share/jupyter")),
    }
}

/// The Python environment's prefix: the active virtualenv or conda env, else python3's.
fn sys_prefix() -> Result<PathBuf, String> {
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(p) = std::env::var_os(var) {
            return Ok(PathBuf::from(p));
        }
    }
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .map_err(|e| format!("--sys-prefix needs python3 to find the environment: {e}"))?;
    let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || p.is_empty() {
        return Err("python3 did not report sys.prefix; use --prefix DIR".into());
    }
    Ok(PathBuf::from(p))
}

/// The `kernels/ixmap` folder for a target.
pub fn kernel_dir(target: &Target) -> Result<PathBuf, String> {
    let data = match target {
        Target::User => user_data_dir()?,
        Target::SysPrefix => sys_prefix()?.join("share").join("jupyter"),
        Target::Prefix(p) => p.join("share").join("jupyter"),
    };
    Ok(data.join("kernels").join("ixmap"))
}

/// kernel.json with `argv[0]` set to `exe`.
pub fn kernel_json(exe: &Path) -> Result<String, String> {
    let mut spec: Json =
        serde_json::from_str(KERNEL_JSON).map_err(|e| format!("kernel/kernel.json: {e}"))?;
    let argv = spec["argv"]
        .as_array_mut()
        .ok_or("kernel/kernel.json has no argv list")?;
    let first = argv
        .first_mut()
        .ok_or("kernel/kernel.json has an empty argv")?;
    *first = Json::String(exe.to_string_lossy().into_owned());
    serde_json::to_string_pretty(&spec).map_err(|e| e.to_string())
}

/// Installs the kernelspec for `exe`; returns the folder written.
pub fn install(target: &Target, exe: &Path) -> Result<PathBuf, String> {
    let dir = kernel_dir(target)?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let write = |name: &str, bytes: &[u8]| -> Result<(), String> {
        let p = dir.join(name);
        std::fs::write(&p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))
    };
    write("kernel.json", kernel_json(exe)?.as_bytes())?;
    write("logo-32x32.png", LOGO_32)?;
    write("logo-64x64.png", LOGO_64)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_points_at_the_binary_and_asks_for_message_interrupts() {
        let spec: Json = serde_json::from_str(
            &kernel_json(Path::new("/opt/bin/ixmap")).expect("template is valid"),
        )
        .expect("output is JSON");
        assert_eq!(spec["argv"][0], "/opt/bin/ixmap");
        assert_eq!(spec["argv"][3], "{connection_file}");
        assert_eq!(spec["language"], "ixmap");
        assert_eq!(spec["interrupt_mode"], "message");
    }

    #[test]
    fn logos_are_pngs_of_their_size() {
        for (bytes, size) in [(LOGO_32, 32u32), (LOGO_64, 64)] {
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            assert_eq!(
                &bytes[16..24],
                [size.to_be_bytes(), size.to_be_bytes()].concat().as_slice()
            );
        }
    }

    #[test]
    fn prefix_installs_under_share_jupyter_kernels() {
        let tmp = std::env::temp_dir().join(format!("ixmap-install-test-{}", std::process::id()));
        let dir = install(&Target::Prefix(tmp.clone()), Path::new("/x/ixmap"))
            .expect("writable temp dir");
        assert_eq!(dir, tmp.join("share/jupyter/kernels/ixmap"));
        assert!(dir.join("kernel.json").is_file() && dir.join("logo-64x64.png").is_file());
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
