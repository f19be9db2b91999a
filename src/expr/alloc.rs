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
use std::ffi::c_void;

extern "C" {
    fn mi_malloc(size: usize) -> *mut c_void;
    fn mi_zalloc(size: usize) -> *mut c_void;
    fn mi_realloc(p: *mut c_void, newsize: usize) -> *mut c_void;
    fn mi_free(p: *mut c_void);
}

/// The alignment every `mi_malloc` block has.
const MI_MIN_ALIGN: usize = 8;

/// mimalloc (see the module's comment): `#[global_allocator] static A: Mi = Mi;`.
pub struct Mi;

// SAFETY: each method hands the request to mimalloc, whose blocks satisfy `layout`:
// `mi_malloc`, `mi_zalloc` and `mi_realloc` only where the alignment is at most 8 (which
// every mimalloc block has), `mimalloc::MiMalloc` (the `_aligned` calls) otherwise; and
// `mi_free` frees the blocks of either.
unsafe impl GlobalAlloc for Mi {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= MI_MIN_ALIGN {
            // SAFETY: see the impl.
            unsafe { mi_malloc(layout.size()) as *mut u8 }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= MI_MIN_ALIGN {
            // SAFETY: see the impl.
            unsafe { mi_zalloc(layout.size()) as *mut u8 }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from mimalloc.
        unsafe { mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= MI_MIN_ALIGN {
            // SAFETY: `ptr` came from mimalloc; the new block is 8-aligned as the old one.
            unsafe { mi_realloc(ptr as *mut c_void, new_size) as *mut u8 }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
        }
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
}
