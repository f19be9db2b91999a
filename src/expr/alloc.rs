//! The global allocator of the `ixmap` binary and the benchmarks: mimalloc, with the
//! allocations of alignment 8 or less (nearly all of them) through `mi_malloc` itself.
//!
//! `mimalloc::MiMalloc` hands every allocation to `mi_malloc_aligned`, whose path checks
//! the alignment, then the size, and falls back to a generic path for some blocks: about
//! 40 instructions an allocation against 15 for `mi_malloc`, which returns blocks aligned
//! to 8 bytes whatever their size (every mimalloc block size is a multiple of 8 and pages
//! start 16-aligned). The simplifier's linear forms and views are small vectors made and
//! dropped by the thousand per map: the allocator was an eighth of the instructions of a
//! median map of the benchmark's random group (callgrind).
//!
//! (Here rather than in the binary so that the benchmarks time the allocator the binary
//! uses.)

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::ffi::c_void;

extern "C" {
    fn mi_malloc(size: usize) -> *mut c_void;
    fn mi_zalloc(size: usize) -> *mut c_void;
    fn mi_realloc(p: *mut c_void, newsize: usize) -> *mut c_void;
    fn mi_free(p: *mut c_void);
}

/// The alignment every `mi_malloc` block has.
const MI_MIN_ALIGN: usize = 8;

/// Blocks of up to 2 KiB freed on a thread are kept on that thread, one last-in-first-out
/// list per size class, up to a few a list, and handed out again before mimalloc is asked.
///
/// Why: mimalloc hands out a page's `free` list in full before it reuses what was freed
/// since (its `local_free` list), so a small map simplified after a large one (a reshape
/// chain's e-graph, dropped) drew every block from the long free lists the large one left,
/// one block not touched for a long time after another: reading each block's link was 60%
/// of the level-2 data misses of the random group's maps in the benchmark's order, twice
/// what the same maps missed simplified alone (callgrind, 1 MiB modelled level 2). Blocks
/// reused last-in-first-out are the ones just written, in cache: a small map's
/// allocations cycle through a few blocks whatever ran before it.
///
/// Classes: each size in words up to 256 bytes, then steps of 64 bytes up to 2 KiB (a
/// block of such a class is allocated at the class's largest size, so that it serves any
/// request of the class). Kept blocks stay allocated as far as mimalloc knows (at most
/// 530 KiB a thread) and are freed when the thread ends (`Release`).
const WORD_CLASSES: usize = 32;
const CLASSES: usize = WORD_CLASSES + 28;
const MAX_KEPT_SIZE: usize = 2048;

/// How many blocks a class keeps.
#[inline]
fn kept_max(c: usize) -> u16 {
    if c < WORD_CLASSES {
        64
    } else {
        8
    }
}

struct Kept {
    /// The first kept block of each class; each holds the next one's address.
    heads: [Cell<*mut u8>; CLASSES],
    /// How many more blocks each class may keep: all 0 until the thread's `RELEASE` is
    /// set up (`armed`), and again once it has freed the lists (the thread is ending).
    room: [Cell<u16>; CLASSES],
    /// Whether this thread's `RELEASE` is set up (it frees the lists when the thread ends).
    armed: Cell<bool>,
}

/// Frees the kept blocks of its thread when the thread ends.
struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        let _ = KEPT_BLOCKS.try_with(|k| {
            k.armed.set(true);
            for (head, room) in k.heads.iter().zip(&k.room) {
                let mut p = head.replace(std::ptr::null_mut());
                while !p.is_null() {
                    // SAFETY: a kept block holds the next one's address (`keep`); each is a
                    // live mimalloc block, freed once here.
                    let next = unsafe { *(p as *mut *mut u8) };
                    unsafe { mi_free(p as *mut c_void) };
                    p = next;
                }
                room.set(0);
            }
        });
    }
}

thread_local! {
    // (a constant initializer and no destructor: nothing allocated, nothing registered,
    // so the allocator may touch it)
    static KEPT_BLOCKS: Kept = const {
        Kept {
            heads: [const { Cell::new(std::ptr::null_mut()) }; CLASSES],
            room: [const { Cell::new(0) }; CLASSES],
            armed: Cell::new(false),
        }
    };
    // (touched once by `keep`, from outside `KEPT_BLOCKS`: its destructor's registration
    // may allocate, which takes nothing from the lists)
    static RELEASE: Release = const { Release };
}

/// The class of a request of `size` bytes (alignment 8 or less), if kept, and the size its
/// blocks are allocated at.
#[inline]
fn class(size: usize) -> Option<(usize, usize)> {
    if size.wrapping_sub(1) >= MAX_KEPT_SIZE {
        None
    } else if size <= WORD_CLASSES * 8 {
        let c = (size - 1) >> 3;
        Some((c, (c + 1) << 3))
    } else {
        let k = (size - WORD_CLASSES * 8 - 1) >> 6;
        Some((WORD_CLASSES + k, WORD_CLASSES * 8 + ((k + 1) << 6)))
    }
}

/// A kept block of class `c`, if there is one.
#[inline]
fn take_kept(c: usize) -> *mut u8 {
    KEPT_BLOCKS
        .try_with(|k| {
            let p = k.heads[c].get();
            if !p.is_null() {
                // SAFETY: a kept block holds the next one's address, written by `keep`.
                k.heads[c].set(unsafe { *(p as *mut *mut u8) });
                k.room[c].set(k.room[c].get() + 1);
            }
            p
        })
        .unwrap_or(std::ptr::null_mut())
}

/// Keeps `p` (a block of class `c`, given up) if its list has room.
///
/// # Safety
/// `p` is a live block of class `c` (allocated at the class's size) that the caller gives
/// up.
#[inline]
unsafe fn keep(p: *mut u8, c: usize) -> bool {
    let mut arm = false;
    let kept = KEPT_BLOCKS
        .try_with(|k| {
            let n = k.room[c].get();
            if n == 0 {
                if !k.armed.get() {
                    // (the first block given up on the thread is freed, its `RELEASE` set
                    // up, and the lists opened)
                    k.armed.set(true);
                    arm = true;
                }
                return false;
            }
            // SAFETY: the block is given up, at least 8 bytes and 8-aligned.
            unsafe { *(p as *mut *mut u8) = k.heads[c].get() };
            k.heads[c].set(p);
            k.room[c].set(n - 1);
            true
        })
        .unwrap_or(false);
    if arm && RELEASE.try_with(|_| ()).is_ok() {
        // (set up: the lists open; where the thread is ending already, they stay shut)
        let _ = KEPT_BLOCKS.try_with(|k| {
            for (c, room) in k.room.iter().enumerate() {
                room.set(kept_max(c));
            }
        });
    }
    kept
}

/// mimalloc (see the module's comment): `#[global_allocator] static A: Mi = Mi;`.
pub struct Mi;

// SAFETY: each method hands the request to mimalloc, whose blocks satisfy `layout`:
// `mi_malloc`, `mi_zalloc` and `mi_realloc` only where the alignment is at most 8 (which
// every mimalloc block has), `mimalloc::MiMalloc` (the `_aligned` calls) otherwise; and
// `mi_free` frees the blocks of either. A block of a kept class (alignment 8 or less, at
// most 2 KiB) is allocated at its class's size (`class`), so a kept one serves any request
// of the class; `dealloc` and `realloc` know a block's class from its layout.
unsafe impl GlobalAlloc for Mi {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() > MI_MIN_ALIGN {
            // SAFETY: the caller's contract, passed on.
            return unsafe { mimalloc::MiMalloc.alloc(layout) };
        }
        match class(layout.size()) {
            Some((c, size)) => {
                let p = take_kept(c);
                if p.is_null() {
                    // SAFETY: see the impl.
                    unsafe { mi_malloc(size) as *mut u8 }
                } else {
                    p
                }
            }
            // SAFETY: see the impl.
            None => unsafe { mi_malloc(layout.size()) as *mut u8 },
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() > MI_MIN_ALIGN {
            // SAFETY: the caller's contract, passed on.
            return unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) };
        }
        match class(layout.size()) {
            Some(_) => {
                // SAFETY: the caller's contract, passed on.
                let p = unsafe { self.alloc(layout) };
                if !p.is_null() {
                    // SAFETY: `p` has room for `layout.size()` bytes.
                    unsafe { p.write_bytes(0, layout.size()) };
                }
                p
            }
            // SAFETY: see the impl.
            None => unsafe { mi_zalloc(layout.size()) as *mut u8 },
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.align() <= MI_MIN_ALIGN {
            if let Some((c, _)) = class(layout.size()) {
                // SAFETY: `ptr` was allocated for `layout`, so at class `c`'s size.
                if unsafe { keep(ptr, c) } {
                    return;
                }
            }
        }
        // SAFETY: `ptr` came from this allocator, that is from mimalloc.
        unsafe { mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() > MI_MIN_ALIGN {
            // SAFETY: the caller's contract, passed on.
            return unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) };
        }
        let (old, new) = (class(layout.size()), class(new_size));
        if old.is_none() && new.is_none() {
            // SAFETY: `ptr` came from mimalloc; the new block is 8-aligned as the old one.
            return unsafe { mi_realloc(ptr as *mut c_void, new_size) as *mut u8 };
        }
        if old.is_some() && old.map(|c| c.0) == new.map(|c| c.0) {
            // (the block was allocated at the class's size)
            return ptr;
        }
        // A kept class on either side: a block of the new size, the bytes, the old one
        // given up (kept or freed), so that blocks of kept classes are of their class's
        // size.
        // SAFETY: `new_size` is non-zero and fits `isize` (the caller's contract).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as above.
        let q = unsafe { self.alloc(new_layout) };
        if !q.is_null() {
            // SAFETY: both blocks are live, distinct, and hold the smaller size.
            unsafe { std::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size)) };
            // SAFETY: `ptr` was allocated for `layout` and is given up.
            unsafe { self.dealloc(ptr, layout) };
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::Mi;
    use std::alloc::{GlobalAlloc, Layout};

    #[test]
    fn blocks_are_aligned_and_usable() {
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1usize, 7, 8, 12, 24, 40, 100, 1000, 70_000] {
                let l = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; each block is freed once, by the same allocator.
                unsafe {
                    let p = Mi.alloc(l);
                    assert!(!p.is_null() && p as usize % align == 0, "{size} {align}");
                    p.write_bytes(0xab, size);
                    let q = Mi.realloc(p, l, size * 3);
                    assert!(!q.is_null() && q as usize % align == 0, "{size} {align}");
                    assert_eq!(*q.add(size - 1), 0xab);
                    Mi.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
                    let z = Mi.alloc_zeroed(l);
                    assert!(z as usize % align == 0 && *z.add(size - 1) == 0);
                    Mi.dealloc(z, l);
                }
            }
        }
    }

    #[test]
    fn a_thread_that_ends_frees_what_it_kept() {
        std::thread::spawn(|| {
            let l = Layout::from_size_align(40, 8).unwrap();
            // SAFETY: a non-zero size; each block is freed once, by the same allocator.
            unsafe {
                let ps: Vec<*mut u8> = (0..100).map(|_| Mi.alloc(l)).collect();
                for p in ps {
                    Mi.dealloc(p, l);
                }
                let p = Mi.alloc(l);
                assert!(!p.is_null());
                Mi.dealloc(p, l);
            }
        })
        .join()
        .unwrap();
    }
}
