//! A POSIX ustar writer for homedir's archives: directories, regular files and symbolic links of one
//! tree, named below the tree's own name, as `tar -cf FILE -C PARENT NAME` writes them.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

const BLOCK: usize = 512;

/// Writes `root` and everything below it into a new tar file `file` (written to a temporary name
/// and renamed into place, so a failed archive never looks complete).
pub fn write_tree(root: &Path, file: &Path) -> std::io::Result<()> {
    let partial = file.with_extension("tar.partial");
    let mut out = BufWriter::new(File::create(&partial)?);
    let name = root
        .file_name()
        .map_or_else(|| "home".into(), |n| n.to_string_lossy().into_owned());
    let written = add(&mut out, root, &name).and_then(|()| {
        // The end of the archive: two zero blocks.
        out.write_all(&[0u8; BLOCK * 2])?;
        out.flush()?;
        out.get_ref().sync_all()
    });
    match written {
        Ok(()) => std::fs::rename(&partial, file),
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

fn add(out: &mut impl Write, path: &Path, name: &str) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = std::fs::read_link(path)?;
        out.write_all(&header(name, &meta, b'2', 0, &target.to_string_lossy())?)?;
    } else if kind.is_dir() {
        out.write_all(&header(&format!("{name}/"), &meta, b'5', 0, "")?)?;
        let mut items: Vec<_> = std::fs::read_dir(path)?.collect::<Result<_, _>>()?;
        items.sort_by_key(|item| item.file_name());
        for item in items {
            let child = format!("{name}/{}", item.file_name().to_string_lossy());
            add(out, &item.path(), &child)?;
        }
    } else if kind.is_file() {
        out.write_all(&header(name, &meta, b'0', meta.len(), "")?)?;
        let mut copied = 0u64;
        let mut source = File::open(path)?;
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = source.read(&mut buf)?;
            if n == 0 {
                break;
            }
            // A file that grows while it is read is cut at the size in its header.
            let n = n.min(usize::try_from(meta.len() - copied).unwrap_or(usize::MAX));
            out.write_all(&buf[..n])?;
            copied += n as u64;
            if copied == meta.len() {
                break;
            }
        }
        if copied < meta.len() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("{} shrank while it was archived", path.display()),
            ));
        }
        let pad = (BLOCK - (copied as usize % BLOCK)) % BLOCK;
        out.write_all(&vec![0u8; pad])?;
    }
    // Other kinds (devices, fifos, sockets) are left out.
    Ok(())
}

/// One ustar header block.
fn header(
    name: &str,
    meta: &std::fs::Metadata,
    kind: u8,
    size: u64,
    link: &str,
) -> std::io::Result<[u8; BLOCK]> {
    let mut h = [0u8; BLOCK];
    let (prefix, name) = split_name(name).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{name}: too long for a ustar name"),
        )
    })?;
    if link.len() > 100 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{name}: link target too long for ustar"),
        ));
    }
    put(&mut h[0..100], name.as_bytes());
    octal(&mut h[100..108], u64::from(meta.mode() & 0o7777));
    octal(&mut h[108..116], u64::from(meta.uid()));
    octal(&mut h[116..124], u64::from(meta.gid()));
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], u64::try_from(meta.mtime()).unwrap_or(0));
    h[156] = kind;
    put(&mut h[157..257], link.as_bytes());
    put(&mut h[257..263], b"ustar\0");
    put(&mut h[263..265], b"00");
    put(&mut h[345..500], prefix.as_bytes());
    // The checksum is computed with its own field as spaces.
    h[148..156].copy_from_slice(b"        ");
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    octal(&mut h[148..155], sum);
    h[155] = b' ';
    Ok(h)
}

/// A name as ustar's prefix (at most 155 bytes) and name (at most 100), split at a slash.
fn split_name(path: &str) -> Option<(&str, &str)> {
    if path.len() <= 100 {
        return Some(("", path));
    }
    let trimmed = path.trim_end_matches('/');
    path.char_indices()
        .filter(|&(i, c)| c == '/' && i < trimmed.len())
        .map(|(i, _)| (&path[..i], &path[i + 1..]))
        .find(|(prefix, name)| prefix.len() <= 155 && name.len() <= 100 && !name.is_empty())
}

fn put(field: &mut [u8], value: &[u8]) {
    let n = value.len().min(field.len());
    field[..n].copy_from_slice(&value[..n]);
}

/// A zero-padded octal number filling the field but its last byte (a NUL).
fn octal(field: &mut [u8], value: u64) {
    let width = field.len() - 1;
    let text = format!("{value:0width$o}");
    let text = &text.as_bytes()[text.len().saturating_sub(width)..];
    field[..width].copy_from_slice(text);
    field[width] = 0;
}
