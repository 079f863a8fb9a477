//! The skills of a session's agent, downloaded into `<workdir>/skills/<name>/` before its tool calls run: each
//! version resolved (`latest` included), its archive (zip, or tar, gzipped or not) fetched and unpacked into a
//! staging directory beside the destination, then moved into place. Archives may come from third parties:
//! members that would land outside the destination, links and special files are refused or skipped, and modes
//! are reduced to `0o755` / `0o644`. A skill that fails is logged and skipped; the others still arrive.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use managed_agents_core::Error;
use serde_json::Value;

use crate::wire::client::ClaudeClient;

/// The most bytes one skill archive may hold, packed or unpacked (256 MiB).
const MAX_SKILL_BYTES: u64 = 256 << 20;

/// Downloads the skills of `session`'s agent into `<workdir>/skills/`; returns the directories made.
pub(crate) async fn download(client: &ClaudeClient, session: &Value, workdir: &Path) -> Vec<PathBuf> {
    let mut made = Vec::new();
    let skills = session["agent"]["skills"].as_array().cloned().unwrap_or_default();
    for skill in skills {
        let Some(skill_id) = skill["skill_id"].as_str() else { continue };
        let version = skill["version"].as_str().unwrap_or("latest");
        match fetch(client, skill_id, version, workdir).await {
            Ok(dir) => {
                tracing::info!(skill_id, dir = %dir.display(), "downloaded a skill");
                made.push(dir);
            }
            Err(error) => tracing::warn!(skill_id, %error, "could not download a skill; going on without it"),
        }
    }
    made
}

/// Removes the skill directories [`download`] made (when the item is done with: the next session may be another
/// agent's).
pub(crate) fn remove(dirs: &[PathBuf]) {
    for dir in dirs {
        if let Err(error) = fs::remove_dir_all(dir) {
            tracing::debug!(dir = %dir.display(), %error, "could not remove a skill directory");
        }
    }
}

async fn fetch(client: &ClaudeClient, skill_id: &str, version: &str, workdir: &Path) -> Result<PathBuf, Error> {
    let record = client.get_skill_version(skill_id, version).await?;
    let version_id = record["id"].as_str().or(record["version"].as_str()).unwrap_or(version).to_string();
    let name = record["name"].as_str().unwrap_or_default();
    let dirname = skill_dir_name(name, skill_id);
    let archive = client.download_skill_version(skill_id, &version_id, MAX_SKILL_BYTES).await?;
    let root = workdir.join("skills");
    let dest = root.join(&dirname);
    tokio::task::spawn_blocking(move || install(&archive, &root, &dest).map(|()| dest))
        .await
        .map_err(|e| Error::invalid_spec("skill archive", e.to_string()))?
        .map_err(|e| Error::invalid_spec("skill archive", e.to_string()))
}

/// One safe path component for the skill's directory: its name's last component, else its id.
fn skill_dir_name(name: &str, skill_id: &str) -> String {
    let safe = |text: &str| {
        let last = Path::new(text.trim()).file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        Some(last).filter(|last| !last.is_empty() && last != "." && last != "..")
    };
    safe(name).or_else(|| safe(&skill_id.replace(['/', '\\'], "_"))).unwrap_or_else(|| "skill".to_string())
}

/// Unpacks `archive` into a staging directory under `root`, then replaces `dest` with it.
fn install(archive: &[u8], root: &Path, dest: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(root)?;
    let stage = root.join(format!(".skill-{:016x}", fastrand::u64(..)));
    let unpacked = unpack(archive, &stage);
    if let Err(error) = unpacked {
        let _ = fs::remove_dir_all(&stage);
        return Err(error);
    }
    let old = root.join(format!(".replaced-{:016x}", fastrand::u64(..)));
    if dest.exists() {
        fs::rename(dest, &old)?;
    }
    fs::rename(&stage, dest)?;
    let _ = fs::remove_dir_all(&old);
    Ok(())
}

/// A member of an archive: its name, whether it is a directory, its mode, and (for a file) its bytes.
struct Member {
    name: String,
    dir: bool,
    mode: u32,
    bytes: Vec<u8>,
}

/// Unpacks a zip or tar (optionally gzipped) archive into `into`, without the one directory every member is
/// wrapped in, if there is one.
fn unpack(archive: &[u8], into: &Path) -> io::Result<()> {
    let members = if archive.starts_with(b"PK") { zip_members(archive)? } else { tar_members(archive)? };
    let names: Vec<PathBuf> = members.iter().map(|m| safe_name(&m.name)).collect::<io::Result<_>>()?;
    let wrapper = wrapper_dir(&names);
    fs::DirBuilder::new().recursive(true).mode(0o700).create(into)?;
    for (member, name) in members.iter().zip(&names) {
        let relative = match &wrapper {
            Some(top) => name.strip_prefix(top).unwrap_or(name).to_path_buf(),
            None => name.clone(),
        };
        if relative.as_os_str().is_empty() {
            continue;
        }
        let target = into.join(&relative);
        if member.dir {
            fs::create_dir_all(&target)?;
            continue;
        }
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&target, &member.bytes)?;
        let mode = if member.mode & 0o111 != 0 { 0o755 } else { 0o644 };
        fs::set_permissions(&target, fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// `name` as a relative path of normal components; an absolute name or a `..` is refused.
fn safe_name(name: &str) -> io::Result<PathBuf> {
    let name = name.replace('\\', "/");
    let mut path = PathBuf::new();
    for component in Path::new(&name).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            _ => return Err(io::Error::new(io::ErrorKind::InvalidData, format!("unsafe archive member {name:?}"))),
        }
    }
    Ok(path)
}

/// The one top directory every member is under, when there is one and something is nested in it.
fn wrapper_dir(names: &[PathBuf]) -> Option<PathBuf> {
    let mut tops = names.iter().filter_map(|n| n.components().next());
    let first = tops.next()?;
    let nested = names.iter().any(|n| n.components().count() > 1);
    (nested && tops.all(|top| top == first)).then(|| PathBuf::from(first.as_os_str()))
}

fn too_big() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "the skill archive unpacks to more than 256 MiB")
}

fn zip_members(archive: &[u8]) -> io::Result<Vec<Member>> {
    let mut zip = zip::ZipArchive::new(io::Cursor::new(archive)).map_err(io::Error::other)?;
    let mut members = Vec::new();
    let mut total = 0u64;
    for index in 0..zip.len() {
        let mut file = zip.by_index(index).map_err(io::Error::other)?;
        let mode = file.unix_mode().unwrap_or(0o644);
        // Links, devices, pipes and sockets are skipped (their name is still checked above).
        let kind = mode & 0o170000;
        if kind != 0 && kind != 0o100000 && kind != 0o040000 {
            safe_name(file.name())?;
            continue;
        }
        let dir = file.is_dir();
        let mut bytes = Vec::new();
        if !dir {
            (&mut file).take(MAX_SKILL_BYTES - total + 1).read_to_end(&mut bytes)?;
            total += bytes.len() as u64;
            if total > MAX_SKILL_BYTES {
                return Err(too_big());
            }
        }
        members.push(Member { name: file.name().to_string(), dir, mode, bytes });
    }
    Ok(members)
}

fn tar_members(archive: &[u8]) -> io::Result<Vec<Member>> {
    let reader: Box<dyn Read> = if archive.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(archive))
    } else {
        Box::new(archive)
    };
    let mut tar = tar::Archive::new(reader);
    let mut members = Vec::new();
    let mut total = 0u64;
    for entry in tar.entries()? {
        let mut entry = entry?;
        let name = entry.path()?.to_string_lossy().into_owned();
        let kind = entry.header().entry_type();
        if !kind.is_file() && !kind.is_dir() {
            safe_name(&name)?;
            continue;
        }
        let mode = entry.header().mode().unwrap_or(0o644);
        let mut bytes = Vec::new();
        if kind.is_file() {
            (&mut entry).take(MAX_SKILL_BYTES - total + 1).read_to_end(&mut bytes)?;
            total += bytes.len() as u64;
            if total > MAX_SKILL_BYTES {
                return Err(too_big());
            }
        }
        members.push(Member { name, dir: kind.is_dir(), mode, bytes });
    }
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zip_of(files: &[(&str, &[u8], u32)]) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        for (name, bytes, mode) in files {
            let options = zip::write::SimpleFileOptions::default().unix_permissions(*mode);
            writer.start_file(*name, options).unwrap();
            io::Write::write_all(&mut writer, bytes).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    fn tar_gz_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        for (name, bytes) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, *bytes).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn a_wrapped_zip_lands_in_the_skill_directory_with_its_execute_bits() {
        let dir = tempdir();
        let archive = zip_of(&[("pdf/SKILL.md", b"# PDF", 0o644), ("pdf/scripts/run.sh", b"echo", 0o4755)]);
        install(&archive, &dir.join("skills"), &dir.join("skills/pdf")).unwrap();
        assert_eq!(fs::read_to_string(dir.join("skills/pdf/SKILL.md")).unwrap(), "# PDF");
        let mode = fs::metadata(dir.join("skills/pdf/scripts/run.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o755, "setuid dropped, execute kept");
    }

    #[test]
    fn a_gzipped_tar_unpacks_and_replaces_an_older_copy() {
        let dir = tempdir();
        let dest = dir.join("skills/notes");
        fs::create_dir_all(&dest).unwrap();
        fs::write(dest.join("old.txt"), "old").unwrap();
        install(&tar_gz_of(&[("SKILL.md", b"new")]), &dir.join("skills"), &dest).unwrap();
        assert_eq!(fs::read_to_string(dest.join("SKILL.md")).unwrap(), "new");
        assert!(!dest.join("old.txt").exists());
    }

    #[test]
    fn members_escaping_the_destination_are_refused() {
        for name in ["../evil.txt", "/etc/evil", "a/../../evil"] {
            let dir = tempdir();
            let archive = zip_of(&[(name, b"x", 0o644)]);
            assert!(install(&archive, &dir.join("skills"), &dir.join("skills/s")).is_err(), "{name}");
            assert!(!dir.join("evil.txt").exists());
        }
    }

    #[test]
    fn skill_directory_names_are_one_safe_component() {
        assert_eq!(skill_dir_name("pdf", "skill_1"), "pdf");
        assert_eq!(skill_dir_name("../../etc", "skill_1"), "etc");
        assert_eq!(skill_dir_name("..", "skill_1"), "skill_1");
        assert_eq!(skill_dir_name("", "skill/1"), "skill_1");
        assert_eq!(skill_dir_name("", ".."), "skill");
        assert_eq!(skill_dir_name(".", "."), "skill");
    }

    fn tempdir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ma-skills-{:016x}", fastrand::u64(..)));
        fs::create_dir_all(&dir).unwrap();
        dir
    }
}
