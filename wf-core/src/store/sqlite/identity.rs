//! Whose file this is. wf marks its databases with SQLite's `application_id`
//! ([`APPLICATION_ID`]), and before it writes a byte it looks at what it was given: a new
//! (empty) file, a wf file, a wf file from before the mark (exactly wf's schema, unmarked), or
//! something else, which it refuses and leaves as it was.
//!
//! The first look happens before the store's own connection touches the file (setting WAL
//! mode writes the header): [`inspect`] reads with a connection that cannot write, and never
//! makes SQLite create a `-wal` or `-shm` file that was not there. The store looks again
//! ([`classify`]) inside the transaction that creates or migrates the schema, under the write
//! lock, so that a file changed in between is still judged on what it holds.

use super::opening::{FileState, Opening};
use super::schema::MIGRATIONS;
use crate::error::BackendErrorKind;
use crate::error::StoreError;
use rusqlite::{Connection, OpenFlags};
use std::collections::BTreeMap;
use std::path::Path;

/// The `application_id` of every wf database: ASCII "wfdb" (0x77666462) in the header's bytes
/// 68..72, where `file(1)` and other tools look.
pub(super) const APPLICATION_ID: i32 = 0x7766_6462;

/// What a database holds, as far as wf is concerned.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Identity {
    /// No table, index or anything else, and no one's mark: wf makes it its own.
    Empty,
    /// Marked as wf's, at this schema version.
    Wf { version: i64 },
    /// Unmarked, but exactly wf's schema at this version: written before wf marked its files.
    Unmarked { version: i64 },
    /// Someone else's.
    Foreign(Foreign),
}

/// What a database that is not wf's holds, for the error that refuses it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Foreign {
    application_id: i32,
    user_version: i64,
    tables: Vec<String>,
}

impl Foreign {
    /// Why wf refuses the file.
    pub(super) fn refusal(&self, opening: Opening<'_>) -> StoreError {
        let mut has = vec![if self.application_id == 0 {
            "application_id 0".to_string()
        } else {
            format!("application_id {:#x}", self.application_id as u32)
        }];
        if self.user_version != 0 {
            has.push(format!("user_version {}", self.user_version));
        }
        const SHOWN: usize = 8;
        let tables = match self.tables.len() {
            0 => "no tables".to_string(),
            n if n <= SHOWN => format!("tables {}", self.tables.join(", ")),
            n => format!(
                "tables {} and {} more",
                self.tables[..SHOWN].join(", "),
                n - SHOWN
            ),
        };
        let has = format!("{} and {tables}", has.join(", "));
        opening.fail(
            BackendErrorKind::Invalid,
            format!(
                "it is not a wf database: it has {has}; wf did not change it; \
                 open a new file for wf"
            ),
        )
    }
}

/// What the file at the path holds, read without writing anything: no lock that changes the
/// file, no journal, no `-wal` or `-shm` file created.
pub(super) fn inspect(opening: Opening<'_>, state: FileState) -> Result<Identity, StoreError> {
    if state == FileState::New {
        return Ok(Identity::Empty);
    }
    let path = opening.path;
    let mut header = [0u8; 16];
    let read = std::fs::File::open(path).and_then(|mut f| {
        use std::io::Read;
        let mut n = 0;
        while n < header.len() {
            match f.read(&mut header[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    });
    let read = read.map_err(|e| opening.io_error("wf cannot read it", e))?;
    if read < header.len() || &header != b"SQLite format 3\0" {
        return Err(opening.fail(
            BackendErrorKind::Invalid,
            "it is not a wf database: it is not a SQLite database at all (its first bytes are \
             not SQLite's header); wf did not change it; open a new file for wf",
        ));
    }
    // A `-wal` file beside it means a connection has the file open (or one crashed): the
    // latest pages may be in it, so read through SQLite's WAL machinery, read-only. Without
    // one, the database file holds everything, and `immutable` reads it as is: a read-only
    // connection would create the `-wal` and `-shm` files of a WAL-mode database (and leave
    // them), and would take locks.
    let conn = if wal_path(path).exists() {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        Connection::open_with_flags(path, flags)
    } else {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        Connection::open_with_flags(immutable_uri(path), flags)
    }
    .map_err(|e| opening.sqlite(e))?;
    // The last connection to a WAL database checkpoints on close: not this one.
    let _ = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    );
    conn.execute_batch("BEGIN").map_err(|e| opening.sqlite(e))?;
    let identity = classify(&conn).map_err(|e| opening.sqlite(e))?;
    let _ = conn.execute_batch("COMMIT");
    Ok(identity)
}

/// What the database on `conn` holds (inside a transaction, for one consistent view). Reads
/// the whole schema, so that a file whose schema is damaged fails here, on open.
pub(super) fn classify(conn: &Connection) -> rusqlite::Result<Identity> {
    let application_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let user_version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let shape = shape(conn)?;
    if application_id == APPLICATION_ID {
        return Ok(Identity::Wf {
            version: user_version,
        });
    }
    if application_id == 0 {
        if shape.is_empty() && user_version == 0 {
            return Ok(Identity::Empty);
        }
        let latest = MIGRATIONS.len() as i64;
        if (1..=latest).contains(&user_version) && shape == wf_shape(user_version)? {
            return Ok(Identity::Unmarked {
                version: user_version,
            });
        }
    }
    let mut tables: Vec<String> = shape
        .keys()
        .filter_map(|k| k.strip_prefix("table "))
        .map(str::to_string)
        .collect();
    tables.sort();
    Ok(Identity::Foreign(Foreign {
        application_id,
        user_version,
        tables,
    }))
}

/// Every schema object that is not SQLite's own ("table runs", "index runs_by_workflow"...),
/// with a table's column names in order.
type Shape = BTreeMap<String, Vec<String>>;

fn shape(conn: &Connection) -> rusqlite::Result<Shape> {
    let mut objects = conn.prepare(
        "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
    )?;
    let objects: Vec<(String, String)> = objects
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut columns = conn.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?;
    let mut shape = Shape::new();
    for (kind, name) in objects {
        let cols = if kind == "table" {
            columns
                .query_map([&name], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?
        } else {
            Vec::new()
        };
        shape.insert(format!("{kind} {name}"), cols);
    }
    Ok(shape)
}

/// The shape of wf's schema at `version`, as its migrations make it.
fn wf_shape(version: i64) -> rusqlite::Result<Shape> {
    let conn = Connection::open_in_memory()?;
    for script in &MIGRATIONS[..version as usize] {
        conn.execute_batch(script)?;
    }
    shape(&conn)
}

fn wal_path(path: &Path) -> std::path::PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push("-wal");
    p.into()
}

/// A `file:` URI that opens `path` as an immutable database: no locks, no `-wal` or `-shm`.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = {
        // `file:///C:/x/app.db`: forward slashes, a drive letter after a leading slash.
        let s = path.to_string_lossy().replace('\\', "/");
        let s = if path.is_absolute() && !s.starts_with('/') {
            format!("/{s}")
        } else {
            s
        };
        s.into_bytes()
    };
    for b in bytes {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'.' | b'_' | b'-' | b'~' => {
                uri.push(b as char)
            }
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migrated(version: usize) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        for script in &MIGRATIONS[..version] {
            conn.execute_batch(script).unwrap();
        }
        conn.pragma_update(None, "user_version", version as i64)
            .unwrap();
        conn
    }

    #[test]
    fn an_unmarked_wf_schema_is_recognised_at_every_version() {
        for version in 1..=MIGRATIONS.len() {
            assert_eq!(
                classify(&migrated(version)).unwrap(),
                Identity::Unmarked {
                    version: version as i64
                }
            );
        }
    }

    #[test]
    fn a_schema_with_one_more_table_or_a_wrong_version_is_foreign() {
        let conn = migrated(MIGRATIONS.len());
        conn.execute_batch("CREATE TABLE users (id)").unwrap();
        assert!(matches!(classify(&conn).unwrap(), Identity::Foreign(_)));
        let conn = migrated(2);
        conn.pragma_update(None, "user_version", 3).unwrap();
        assert!(matches!(classify(&conn).unwrap(), Identity::Foreign(_)));
    }

    #[test]
    fn an_empty_database_is_empty_unless_someone_marked_it() {
        let conn = Connection::open_in_memory().unwrap();
        assert_eq!(classify(&conn).unwrap(), Identity::Empty);
        conn.pragma_update(None, "application_id", 7).unwrap();
        assert!(matches!(classify(&conn).unwrap(), Identity::Foreign(_)));
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        assert_eq!(classify(&conn).unwrap(), Identity::Wf { version: 0 });
    }

    #[test]
    fn the_mark_reads_wfdb() {
        assert_eq!(&APPLICATION_ID.to_be_bytes(), b"wfdb");
    }

    #[test]
    fn uris_escape_what_sqlite_would_read_as_syntax() {
        #[cfg(unix)]
        assert_eq!(
            immutable_uri(Path::new("/tmp/a b?#%.db")),
            "file:/tmp/a%20b%3F%23%25.db?immutable=1"
        );
    }
}
