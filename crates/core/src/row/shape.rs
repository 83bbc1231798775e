//! Row shapes: the sequence of a row's column names, interned to a number when the row is made,
//! so code that depends on the names (star projections) compares two numbers instead of every
//! name. Equal numbers mean exactly equal name sequences (interning compares the names); the
//! numbers are process-wide, so rows may cross threads.
//!
//! At most `MAX_SHAPES` distinct shapes, of at most `MAX_SHAPE_BYTES` of names in all, are
//! interned, and none whose names exceed `MAX_KEY_BYTES`; rows of any other shape get
//! `UNKNOWN`, and their users compare names. Each thread's copy holds interned shapes only, so
//! it is bounded by the same numbers.

use std::cell::RefCell;
use std::sync::Mutex;

use rustc_hash::FxHashMap;

/// The shape number of rows whose shape was not interned.
pub const UNKNOWN: u32 = 0;

const MAX_SHAPES: usize = 4096;

/// The most bytes of names all interned shapes hold together.
pub const MAX_SHAPE_BYTES: usize = 16 << 20;

/// The longest shape (its names, a byte after each) that is interned.
pub const MAX_KEY_BYTES: usize = 64 << 10;

/// A shape's key: its names, each followed by a 0 byte (escaped JSON names never hold one).
type Key = Box<[u8]>;

/// The interned shapes, and the bytes their keys hold.
static GLOBAL: Mutex<Option<(FxHashMap<Key, u32>, usize)>> = Mutex::new(None);

/// Whether a shape key names a column twice.
fn repeats(key: &[u8]) -> bool {
    let mut names: Vec<&[u8]> = key.split(|&c| c == 0).collect();
    names.pop(); // after the last name's 0
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    names.len() != count
}

/// A shape number and whether the shape repeats a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape {
    pub id: u32,
    pub repeats: bool,
}

#[derive(Default)]
struct Local {
    key: Vec<u8>,
    last: (Vec<u8>, Shape),
    known: FxHashMap<Key, Shape>,
}

thread_local! {
    /// This thread's copy of the shapes it has met, and the last one (rows of one topic mostly
    /// share a shape).
    static LOCAL: RefCell<Local> = RefCell::new(Local::default());
}

/// The shape of a row whose column names are `names`.
pub fn intern<'a>(names: impl Iterator<Item = &'a [u8]>) -> Shape {
    LOCAL.with(|l| {
        let l = &mut *l.borrow_mut();
        l.key.clear();
        for n in names {
            l.key.extend_from_slice(n);
            l.key.push(0);
        }
        if l.key == l.last.0 && !l.key.is_empty() {
            return l.last.1;
        }
        let shape = match l.known.get(l.key.as_slice()) {
            Some(shape) => *shape,
            None => {
                let repeats = repeats(&l.key);
                let mut g = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
                let (all, bytes) = g.get_or_insert_with(Default::default);
                let id = match all.get(l.key.as_slice()) {
                    Some(id) => *id,
                    None if all.len() >= MAX_SHAPES
                        || l.key.len() > MAX_KEY_BYTES
                        || *bytes + l.key.len() > MAX_SHAPE_BYTES =>
                    {
                        return Shape {
                            id: UNKNOWN,
                            repeats,
                        }
                    }
                    None => {
                        let id = all.len() as u32 + 1;
                        all.insert(l.key.as_slice().into(), id);
                        *bytes += l.key.len();
                        id
                    }
                };
                let shape = Shape { id, repeats };
                l.known.insert(l.key.as_slice().into(), shape);
                shape
            }
        };
        l.last.0.clear();
        l.last.0.extend_from_slice(&l.key);
        l.last.1 = shape;
        shape
    })
}

/// The bytes the interned shapes hold (tests of the bound).
#[cfg(test)]
pub(crate) fn interned_bytes() -> usize {
    let g = GLOBAL.lock().unwrap_or_else(|e| e.into_inner());
    g.as_ref().map_or(0, |(_, bytes)| *bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(names: &[&str]) -> u32 {
        intern(names.iter().map(|n| n.as_bytes())).id
    }

    #[test]
    fn equal_names_give_equal_numbers() {
        let a = shape(&["id", "name"]);
        assert_ne!(a, UNKNOWN);
        assert_eq!(shape(&["id", "name"]), a);
        assert_ne!(shape(&["name", "id"]), a);
        assert_ne!(shape(&["id"]), a);
        assert_ne!(shape(&["idname"]), shape(&["id", "name"]));
        let other = std::thread::spawn(|| shape(&["id", "name"]))
            .join()
            .unwrap();
        assert_eq!(other, a, "numbers are process-wide");
        assert!(!intern([&b"a"[..], b"b"].into_iter()).repeats);
        assert!(intern([&b"a"[..], b"b", b"a"].into_iter()).repeats);
        assert!(intern([&b""[..], b""].into_iter()).repeats);
        assert!(!intern([&b""[..]].into_iter()).repeats);
    }
}
