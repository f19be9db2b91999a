//! Typed HLO attributes, read from the text the grammar keeps for each `name=value`.
//!
//! ```text
//! dimensions={1,0}                      -> dimensions: [1, 0]
//! slice={[5:10:1], [3:20:7]}            -> slice: [5..10 step 1, 3..20 step 7]
//! padding=1_4_1x4_8_0                   -> padding: [(1, 4, 1), (4, 8, 0)]
//! window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1}
//! lhs_batch_dims={0}, rhs_contracting_dims={1}, ...
//! ```
//!
//! Unknown attributes (metadata, backend_config, sharding, ...) are kept as text and never
//! fail the instruction.

/// Why an attribute value could not be read: a message and a byte range within the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrError {
    pub message: String,
    pub start: usize,
    pub end: usize,
}

fn err(message: impl Into<String>, start: usize, end: usize) -> AttrError {
    AttrError {
        message: message.into(),
        start,
        end,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceDim {
    pub start: i64,
    pub limit: i64,
    pub stride: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PadDim {
    pub lo: i64,
    pub hi: i64,
    pub interior: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowDim {
    pub size: i64,
    pub stride: i64,
    pub pad_lo: i64,
    pub pad_hi: i64,
    pub lhs_dilate: i64,
    pub rhs_dilate: i64,
}

impl Default for WindowDim {
    fn default() -> Self {
        WindowDim {
            size: 1,
            stride: 1,
            pad_lo: 0,
            pad_hi: 0,
            lhs_dilate: 1,
            rhs_dilate: 1,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DotDims {
    pub lhs_batch: Vec<i64>,
    pub rhs_batch: Vec<i64>,
    pub lhs_contracting: Vec<i64>,
    pub rhs_contracting: Vec<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GatherDims {
    pub offset_dims: Vec<i64>,
    pub collapsed_slice_dims: Vec<i64>,
    pub start_index_map: Vec<i64>,
    pub index_vector_dim: i64,
    pub slice_sizes: Vec<i64>,
}

/// Scatter's dimension numbers (its `index_vector_dim` is kept in [`GatherDims`], the
/// attribute both ops share).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ScatterDims {
    pub update_window_dims: Vec<i64>,
    pub inserted_window_dims: Vec<i64>,
    pub scatter_dims_to_operand_dims: Vec<i64>,
}

/// The attributes ixmap understands, typed; everything else in `other`.
#[derive(Clone, Debug, Default)]
pub struct Attrs {
    /// `parameter(N)`
    pub parameter_number: Option<i64>,
    /// The literal of `constant(...)`, as written.
    pub literal: Option<String>,
    pub dimensions: Option<Vec<i64>>,
    pub slice: Option<Vec<SliceDim>>,
    pub padding: Option<Vec<PadDim>>,
    pub window: Option<Vec<WindowDim>>,
    pub dot: Option<DotDims>,
    pub gather: Option<GatherDims>,
    pub scatter: Option<ScatterDims>,
    pub dynamic_slice_sizes: Option<Vec<i64>>,
    pub iota_dimension: Option<i64>,
    /// `get-tuple-element(...), index=N`
    pub index: Option<i64>,
    pub to_apply: Option<String>,
    pub calls: Option<String>,
    pub kind: Option<String>,
    pub dim_labels: Option<String>,
    pub feature_group_count: Option<i64>,
    pub batch_group_count: Option<i64>,
    pub other: Vec<(String, String)>,
}

fn int_at(s: &str, off: usize) -> Result<i64, AttrError> {
    let t = s.trim();
    let lead = s.len() - s.trim_start().len();
    t.parse::<i64>().map_err(|_| {
        let what = if t.is_empty() {
            "a missing number".to_string()
        } else {
            format!("`{t}`")
        };
        err(
            format!("expected an integer, found {what}"),
            off + lead,
            off + lead + t.len().max(1),
        )
    })
}

/// `{1, 2, 3}` (or `{}`): a list of integers.
pub fn int_list(v: &str) -> Result<Vec<i64>, AttrError> {
    let t = v.trim();
    if !(t.starts_with('{') && t.ends_with('}')) {
        return Err(err("expected a list like {0,1}", 0, v.len()));
    }
    let lead = v.len() - v.trim_start().len();
    let inner = &t[1..t.len() - 1];
    if inner.trim().is_empty() {
        return Ok(vec![]);
    }
    let mut out = Vec::new();
    let mut pos = lead + 1;
    for part in inner.split(',') {
        out.push(int_at(part, pos)?);
        pos += part.len() + 1;
    }
    Ok(out)
}

/// `{[5:10:1], [3:20:7]}`; the stride defaults to 1.
pub fn slice_list(v: &str) -> Result<Vec<SliceDim>, AttrError> {
    let t = v.trim();
    if !(t.starts_with('{') && t.ends_with('}')) {
        return Err(err(
            "expected slice={[start:limit:stride], ...}",
            0,
            v.len(),
        ));
    }
    let mut out = Vec::new();
    let bytes = v.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'[' {
            let close = v[i..]
                .find(']')
                .map(|k| i + k)
                .ok_or_else(|| err("unclosed `[`", i, i + 1))?;
            let body = &v[i + 1..close];
            let parts: Vec<&str> = body.split(':').collect();
            if parts.len() < 2 || parts.len() > 3 {
                return Err(err(
                    "expected [start:limit] or [start:limit:stride]",
                    i,
                    close + 1,
                ));
            }
            let mut pos = i + 1;
            let mut nums = Vec::new();
            for p in &parts {
                nums.push(int_at(p, pos)?);
                pos += p.len() + 1;
            }
            let stride = nums.get(2).copied().unwrap_or(1);
            if stride <= 0 {
                return Err(err(
                    format!("slice stride must be positive, not {stride}"),
                    i,
                    close + 1,
                ));
            }
            out.push(SliceDim {
                start: nums[0],
                limit: nums[1],
                stride,
            });
            i = close + 1;
        } else {
            i += 1;
        }
    }
    Ok(out)
}

/// `1_4_1x4_8_0`: low_high[_interior] per dimension, separated by `x`.
pub fn padding(v: &str) -> Result<Vec<PadDim>, AttrError> {
    let mut out = Vec::new();
    let mut pos = 0;
    for dim in v.split('x') {
        let parts: Vec<&str> = dim.split('_').collect();
        if parts.len() < 2 || parts.len() > 3 {
            return Err(err(
                "expected low_high or low_high_interior per dimension",
                pos,
                pos + dim.len().max(1),
            ));
        }
        let mut p = pos;
        let mut nums = Vec::new();
        for part in &parts {
            nums.push(int_at(part, p)?);
            p += part.len() + 1;
        }
        let interior = nums.get(2).copied().unwrap_or(0);
        if interior < 0 {
            return Err(err(
                "interior padding cannot be negative",
                pos,
                pos + dim.len(),
            ));
        }
        out.push(PadDim {
            lo: nums[0],
            hi: nums[1],
            interior,
        });
        pos += dim.len() + 1;
    }
    Ok(out)
}

fn x_list(v: &str, off: usize) -> Result<Vec<i64>, AttrError> {
    let mut out = Vec::new();
    let mut pos = off;
    for p in v.split('x') {
        out.push(int_at(p, pos)?);
        pos += p.len() + 1;
    }
    Ok(out)
}

/// `{size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1}`.
pub fn window(v: &str) -> Result<Vec<WindowDim>, AttrError> {
    let t = v.trim();
    if !(t.starts_with('{') && t.ends_with('}')) {
        return Err(err(
            "expected window={size=... stride=... pad=...}",
            0,
            v.len(),
        ));
    }
    let mut dims: Vec<WindowDim> = Vec::new();
    let inner_off = v.find('{').unwrap_or(0) + 1;
    let inner = &v[inner_off..v.rfind('}').unwrap_or(v.len())];
    let mut pos = inner_off;
    let mut size_seen = false;
    for item in inner.split(' ') {
        let here = pos;
        pos += item.len() + 1;
        if item.is_empty() {
            continue;
        }
        let Some(eq) = item.find('=') else {
            return Err(err(
                format!("expected key=value in window, found `{item}`"),
                here,
                here + item.len(),
            ));
        };
        let (key, val) = (&item[..eq], &item[eq + 1..]);
        let voff = here + eq + 1;
        let n_before = dims.len();
        let ensure = |dims: &mut Vec<WindowDim>, n: usize| {
            if dims.len() < n {
                dims.resize(n, WindowDim::default());
            }
        };
        match key {
            "size" => {
                let xs = x_list(val, voff)?;
                ensure(&mut dims, xs.len());
                for (d, x) in dims.iter_mut().zip(&xs) {
                    if *x <= 0 {
                        return Err(err("window size must be positive", voff, voff + val.len()));
                    }
                    d.size = *x;
                }
                size_seen = true;
            }
            "stride" | "lhs_dilate" | "rhs_dilate" => {
                let xs = x_list(val, voff)?;
                ensure(&mut dims, xs.len());
                for (d, x) in dims.iter_mut().zip(&xs) {
                    if *x <= 0 {
                        return Err(err(
                            format!("window {key} must be positive"),
                            voff,
                            voff + val.len(),
                        ));
                    }
                    match key {
                        "stride" => d.stride = *x,
                        "lhs_dilate" => d.lhs_dilate = *x,
                        _ => d.rhs_dilate = *x,
                    }
                }
            }
            "pad" => {
                let ps = padding(val).map_err(|e| AttrError {
                    start: e.start + voff,
                    end: e.end + voff,
                    ..e
                })?;
                ensure(&mut dims, ps.len());
                for (d, p) in dims.iter_mut().zip(&ps) {
                    d.pad_lo = p.lo;
                    d.pad_hi = p.hi;
                }
            }
            _ => {
                return Err(err(
                    format!("unknown window field `{key}`"),
                    here,
                    here + key.len(),
                ))
            }
        }
        let _ = n_before;
    }
    if !size_seen {
        return Err(err("window needs size=...", 0, v.len()));
    }
    Ok(dims)
}

impl Attrs {
    /// The text of an attribute ixmap keeps untyped (`backend_config`, `metadata`,
    /// `direction`, ...), trimmed; `None` when the instruction has none.
    pub fn other(&self, key: &str) -> Option<&str> {
        self.other
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim())
    }

    /// Records `key=value`, typed when ixmap knows the key. `Err` has offsets within `value`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), AttrError> {
        let int = |v: &str| int_at(v, 0);
        match key {
            "dimensions" => self.dimensions = Some(int_list(value)?),
            "slice" => self.slice = Some(slice_list(value)?),
            "padding" => self.padding = Some(padding(value)?),
            "window" => self.window = Some(window(value)?),
            "dynamic_slice_sizes" => self.dynamic_slice_sizes = Some(int_list(value)?),
            "iota_dimension" => self.iota_dimension = Some(int(value)?),
            "index" => self.index = Some(int(value)?),
            "to_apply" => self.to_apply = Some(value.trim_start_matches('%').to_string()),
            "calls" => self.calls = Some(value.trim_start_matches('%').to_string()),
            "kind" => self.kind = Some(value.to_string()),
            "dim_labels" => self.dim_labels = Some(value.to_string()),
            "feature_group_count" => self.feature_group_count = Some(int(value)?),
            "batch_group_count" => self.batch_group_count = Some(int(value)?),
            "lhs_batch_dims" => {
                self.dot.get_or_insert_with(Default::default).lhs_batch = int_list(value)?
            }
            "rhs_batch_dims" => {
                self.dot.get_or_insert_with(Default::default).rhs_batch = int_list(value)?
            }
            "lhs_contracting_dims" => {
                self.dot
                    .get_or_insert_with(Default::default)
                    .lhs_contracting = int_list(value)?
            }
            "rhs_contracting_dims" => {
                self.dot
                    .get_or_insert_with(Default::default)
                    .rhs_contracting = int_list(value)?
            }
            "offset_dims" => {
                self.gather.get_or_insert_with(Default::default).offset_dims = int_list(value)?
            }
            "collapsed_slice_dims" => {
                self.gather
                    .get_or_insert_with(Default::default)
                    .collapsed_slice_dims = int_list(value)?
            }
            "start_index_map" => {
                self.gather
                    .get_or_insert_with(Default::default)
                    .start_index_map = int_list(value)?
            }
            "index_vector_dim" => {
                self.gather
                    .get_or_insert_with(Default::default)
                    .index_vector_dim = int(value)?
            }
            "update_window_dims" => {
                self.scatter
                    .get_or_insert_with(Default::default)
                    .update_window_dims = int_list(value)?
            }
            "inserted_window_dims" => {
                self.scatter
                    .get_or_insert_with(Default::default)
                    .inserted_window_dims = int_list(value)?
            }
            "scatter_dims_to_operand_dims" => {
                self.scatter
                    .get_or_insert_with(Default::default)
                    .scatter_dims_to_operand_dims = int_list(value)?
            }
            "slice_sizes" => {
                self.gather.get_or_insert_with(Default::default).slice_sizes = int_list(value)?
            }
            _ => self.other.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_seed_attributes() {
        assert_eq!(int_list("{1, 0}").unwrap(), vec![1, 0]);
        assert_eq!(int_list("{}").unwrap(), Vec::<i64>::new());
        let s = slice_list("{[5:10:1], [3:20:7], [0:50:2]}").unwrap();
        assert_eq!(
            s[1],
            SliceDim {
                start: 3,
                limit: 20,
                stride: 7
            }
        );
        let p = padding("1_4_1x4_8_0").unwrap();
        assert_eq!(
            p[0],
            PadDim {
                lo: 1,
                hi: 4,
                interior: 1
            }
        );
        let w = window("{size=1x512 pad=0_0x0_0}").unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!(w[1].size, 512);
    }

    #[test]
    fn bad_values_point_at_the_token() {
        let e = int_list("{1, x}").unwrap_err();
        assert_eq!((e.start, e.end), (4, 5));
        assert!(e.message.contains("`x`"));
        assert!(padding("1_4x2").is_err());
    }
}
