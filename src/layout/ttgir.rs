//! TTGIR layout attributes, for a tensor shape, as linear layouts.
//!
//! Each attribute is turned into bases from its documented meaning; the choices where the
//! attributes leave the numbering of registers or warps to the compiler are stated here,
//! and every one of them changes only *which* register or warp holds an element, never the
//! set of elements a thread holds.
//!
//! - `#ttg.blocked<{sizePerThread, threadsPerWarp, warpsPerCTA, order}>`: each thread holds
//!   `sizePerThread[d]` contiguous elements per dimension, lanes and then warps tile the
//!   dimensions, `order[0]` fastest. The tile `spt·tpw·wpc` repeats over a larger tensor
//!   (more registers, repeats numbered in `order`); on a smaller tensor coordinates wrap
//!   (lanes and warps past the tensor hold copies, registers past it are dropped).
//! - `#ttg.linear<{register, lane, warp, block}>`: the bases as written, for the shape.
//! - `#ttg.slice<{dim, parent}>`: the parent's layout for the shape with a 1 inserted at
//!   `dim`, with that output removed.
//! - `#ttg.nvidia_mma<{versionMajor = 2, warpsPerCTA, instrShape = [16, 8]}>`: the
//!   accumulator fragment of PTX's `mma.m16n8`: lane `4g + t` holds rows `g`, `g + 8` and
//!   columns `2t`, `2t + 1`; warps along dimension 1 first; repeats along dimension 1 first.
//!   `versionMajor = 3` (`wgmma`, `instrShape = [16, N, K]`): each warp owns 16 rows of the
//!   warpgroup's 64, the same fragment repeated every 8 columns up to N; warps along
//!   dimension 0 first.
//! - `#ttg.dot_op<{opIdx, parent = mma v2, kWidth}>`: the A (`opIdx = 0`) or B (`opIdx = 1`)
//!   fragment of `mma.m16n8k(8·kWidth)`: `kWidth` contiguous elements along K per register
//!   group; warps along the other operand's dimension hold copies.
//! - `#ttg.swizzled_shared<{vec, perPhase, maxPhase, order}>` (rank 2): offset to
//!   coordinate; row `r` stores its column groups of `vec` XORed with
//!   `(r floordiv perPhase) mod maxPhase`.
//! - `#ttg.nvmma_shared<{swizzlingByteWidth, transposed, elementBitWidth}>` (rank 2): rows
//!   of `swizzlingByteWidth` bytes, 16-byte chunks XORed with the row's phase (128 B: every
//!   row, 8 phases; 64 B: every 2 rows, 4; 32 B: every 4 rows, 2); a wider tensor is stored
//!   as column blocks of that width, one after the other.

use super::linear::LinearLayout;
use super::{LayoutError, Result};

/// An attribute as read: its name and its parameters.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Int(i64, usize),
    List(Vec<i64>, usize),
    /// `[[0, 1], [2, 0]]`: the bases of `#ttg.linear`.
    Lists(Vec<Vec<i64>>, usize),
    Bool(bool, usize),
    Attr(Box<Attr>),
}

#[derive(Clone, Debug, PartialEq)]
struct Attr {
    name: String,
    at: usize,
    params: Vec<(String, Val)>,
}

impl Attr {
    fn get(&self, k: &str) -> Option<&Val> {
        self.params.iter().find(|(n, _)| n == k).map(|(_, v)| v)
    }
    fn list(&self, k: &str) -> Result<Vec<i64>> {
        match self.get(k) {
            Some(Val::List(v, _)) => Ok(v.clone()),
            Some(Val::Int(v, _)) => Ok(vec![*v]),
            Some(other) => Err(LayoutError::at(
                format!("`{k}` takes a list like [1, 4]"),
                pos(other),
            )),
            None => Err(LayoutError::at(
                format!("#ttg.{} needs `{k}`", self.name),
                self.at,
            )),
        }
    }
    fn int(&self, k: &str) -> Result<i64> {
        match self.get(k) {
            Some(Val::Int(v, _)) => Ok(*v),
            Some(other) => Err(LayoutError::at(
                format!("`{k}` takes an integer"),
                pos(other),
            )),
            None => Err(LayoutError::at(
                format!("#ttg.{} needs `{k}`", self.name),
                self.at,
            )),
        }
    }
    fn int_or(&self, k: &str, d: i64) -> Result<i64> {
        if self.get(k).is_none() {
            Ok(d)
        } else {
            self.int(k)
        }
    }
    fn bool_or(&self, k: &str, d: bool) -> Result<bool> {
        match self.get(k) {
            None => Ok(d),
            Some(Val::Bool(b, _)) => Ok(*b),
            Some(other) => Err(LayoutError::at(
                format!("`{k}` takes true or false"),
                pos(other),
            )),
        }
    }
    fn attr(&self, k: &str) -> Result<&Attr> {
        match self.get(k) {
            Some(Val::Attr(a)) => Ok(a),
            Some(other) => Err(LayoutError::at(
                format!("`{k}` takes a layout attribute"),
                pos(other),
            )),
            None => Err(LayoutError::at(
                format!("#ttg.{} needs `{k}`", self.name),
                self.at,
            )),
        }
    }
}

fn pos(v: &Val) -> usize {
    match v {
        Val::Int(_, p) | Val::List(_, p) | Val::Lists(_, p) | Val::Bool(_, p) => *p,
        Val::Attr(a) => a.at,
    }
}

/// Whether `text` looks like a TTGIR attribute (`#ttg.`, `#triton_gpu.` or `ttg.`).
pub fn is_attribute(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("#ttg.") || t.starts_with("#triton_gpu.") || t.starts_with("ttg.")
}

/// The linear layout of a TTGIR layout attribute for a tensor of shape `shape`.
pub fn parse(text: &str, shape: &[i64]) -> Result<LinearLayout> {
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
    };
    let a = p.attr(0)?;
    p.ws();
    if p.i < p.s.len() {
        return Err(LayoutError::at("unexpected text after the attribute", p.i));
    }
    for (d, s) in shape.iter().enumerate() {
        if *s < 1 || s & (s - 1) != 0 || *s > (1 << 24) {
            return Err(LayoutError::new(format!(
                "shape[{d}] = {s}: the tensor's dimensions must be powers of two (up to 2^24)"
            )));
        }
    }
    build(&a, shape)
}

fn log2(v: i64, what: &str, at: usize) -> Result<usize> {
    if v < 1 || v & (v - 1) != 0 || v > (1 << 24) {
        return Err(LayoutError::at(
            format!("{what} = {v} is not a power of two"),
            at,
        ));
    }
    Ok(v.trailing_zeros() as usize)
}

fn unit(rank: usize, d: usize, v: i64) -> Vec<i64> {
    let mut b = vec![0; rank];
    b[d] = v;
    b
}

/// Bases, output sizes fitted to the shape: repeats appended as registers (in `rep_order`)
/// when the tensor is larger than the tile, coordinates wrapped when smaller (register
/// bases that become zero dropped).
struct Builder {
    rank: usize,
    reg: Vec<Vec<i64>>,
    lane: Vec<Vec<i64>>,
    warp: Vec<Vec<i64>>,
}

impl Builder {
    fn finish(mut self, tile: &[i64], shape: &[i64], rep_order: &[usize]) -> Result<LinearLayout> {
        for &d in rep_order {
            let mut t = tile[d];
            while t < shape[d] {
                self.reg.push(unit(self.rank, d, t));
                t *= 2;
            }
        }
        let wrap = |v: Vec<Vec<i64>>| -> Vec<Vec<i64>> {
            v.into_iter()
                .map(|b| b.iter().zip(shape).map(|(x, s)| x % s).collect())
                .collect()
        };
        let reg: Vec<Vec<i64>> = wrap(self.reg)
            .into_iter()
            .filter(|b| b.iter().any(|x| *x != 0))
            .collect();
        let outs = (0..self.rank)
            .map(|d| (format!("dim{d}"), shape[d]))
            .collect();
        LinearLayout::new(
            vec![
                ("register".into(), reg),
                ("lane".into(), wrap(self.lane)),
                ("warp".into(), wrap(self.warp)),
                ("block".into(), vec![]),
            ],
            outs,
        )
    }
}

fn check_order(order: &[usize], rank: usize, at: usize) -> Result<()> {
    let mut seen = vec![false; rank];
    for &o in order {
        if o >= rank || seen[o] {
            return Err(LayoutError::at(
                format!("order must be a permutation of 0..{rank}"),
                at,
            ));
        }
        seen[o] = true;
    }
    if order.len() != rank {
        return Err(LayoutError::at(
            format!("order must have {rank} entries"),
            at,
        ));
    }
    Ok(())
}

fn build(a: &Attr, shape: &[i64]) -> Result<LinearLayout> {
    let rank = shape.len();
    let wrong_rank = |k: &str, n: usize| {
        LayoutError::at(
            format!("`{k}` has {n} entries but the tensor has rank {rank}"),
            a.at,
        )
    };
    match a.name.as_str() {
        "blocked" => {
            let spt = a.list("sizePerThread")?;
            let tpw = a.list("threadsPerWarp")?;
            let wpc = a.list("warpsPerCTA")?;
            let order: Vec<usize> = a.list("order")?.iter().map(|x| *x as usize).collect();
            for (k, v) in [("sizePerThread", &spt), ("threadsPerWarp", &tpw), ("warpsPerCTA", &wpc)] {
                if v.len() != rank {
                    return Err(wrong_rank(k, v.len()));
                }
            }
            check_order(&order, rank, a.at)?;
            if let Ok(c) = a.list("CTAsPerCGA") {
                if c.iter().any(|x| *x != 1) {
                    return Err(LayoutError::at("only one CTA per CGA is supported (CTAsPerCGA all 1)", a.at));
                }
            }
            let mut b = Builder { rank, reg: vec![], lane: vec![], warp: vec![] };
            let mut tile = vec![1i64; rank];
            for (list, which, name) in [(&spt, 0, "sizePerThread"), (&tpw, 1, "threadsPerWarp"), (&wpc, 2, "warpsPerCTA")] {
                for &d in &order {
                    let k = log2(list[d], name, a.at)?;
                    if tile[d].trailing_zeros() as usize + k > 30 {
                        return Err(LayoutError::at("the layout's tile exceeds 2^30 along a dimension", a.at));
                    }
                    for j in 0..k {
                        let basis = unit(rank, d, tile[d] << j);
                        match which {
                            0 => b.reg.push(basis),
                            1 => b.lane.push(basis),
                            _ => b.warp.push(basis),
                        }
                    }
                    tile[d] <<= k;
                }
            }
            b.finish(&tile, shape, &order)
        }
        "linear" => {
            // The bases themselves: `#ttg.linear<{register = [[0, 1]], lane = [...], warp =
            // [...], block = [...]}>`, each basis a coordinate of the tensor.
            let mut ins = Vec::new();
            for k in ["register", "lane", "warp", "block"] {
                let bases = match a.get(k) {
                    None => vec![],
                    Some(Val::Lists(v, _)) => v.clone(),
                    Some(Val::List(v, _)) if v.is_empty() => vec![],
                    Some(other) => {
                        return Err(LayoutError::at(
                            format!("`{k}` takes a list of bases like [[0, 1], [1, 0]]"),
                            pos(other),
                        ))
                    }
                };
                ins.push((k.to_string(), bases));
            }
            let outs = (0..rank).map(|d| (format!("dim{d}"), shape[d])).collect();
            LinearLayout::new(ins, outs).map_err(|e| LayoutError::at(e.message, a.at))
        }
        "slice" => {
            let dim = a.int("dim")?;
            if dim < 0 || dim as usize > rank {
                return Err(LayoutError::at(format!("dim = {dim} is outside the parent's rank"), a.at));
            }
            let mut parent_shape = shape.to_vec();
            parent_shape.insert(dim as usize, 1);
            let parent = build(a.attr("parent")?, &parent_shape)?;
            let d = dim as usize;
            let ins = parent
                .ins
                .iter()
                .map(|(n, bases)| {
                    let bs: Vec<Vec<i64>> = bases
                        .iter()
                        .map(|v| {
                            let mut v = v.clone();
                            v.remove(d);
                            v
                        })
                        .filter(|v| n != "register" || v.iter().any(|x| *x != 0))
                        .collect();
                    (n.clone(), bs)
                })
                .collect();
            let outs = (0..rank).map(|k| (format!("dim{k}"), shape[k])).collect();
            LinearLayout::new(ins, outs)
        }
        "nvidia_mma" => {
            if rank != 2 {
                return Err(LayoutError::at("nvidia_mma layouts are supported for rank 2", a.at));
            }
            let major = a.int("versionMajor")?;
            let wpc = a.list("warpsPerCTA")?;
            if wpc.len() != 2 {
                return Err(wrong_rank("warpsPerCTA", wpc.len()));
            }
            let (wm, wn) = (log2(wpc[0], "warpsPerCTA[0]", a.at)?, log2(wpc[1], "warpsPerCTA[1]", a.at)?);
            let lane = vec![vec![0, 2], vec![0, 4], vec![1, 0], vec![2, 0], vec![4, 0]];
            match major {
                2 => {
                    let mut b = Builder { rank, reg: vec![vec![0, 1], vec![8, 0]], lane, warp: vec![] };
                    for j in 0..wn {
                        b.warp.push(vec![0, 8 << j]);
                    }
                    for j in 0..wm {
                        b.warp.push(vec![16 << j, 0]);
                    }
                    b.finish(&[16 << wm, 8 << wn], shape, &[1, 0])
                }
                3 => {
                    let instr = a.list("instrShape")?;
                    let n = *instr.get(1).ok_or_else(|| LayoutError::at("instrShape needs [16, N, K]", a.at))?;
                    let kn = log2(n, "instrShape[1]", a.at)?;
                    if kn < 3 {
                        return Err(LayoutError::at("instrShape[1] must be at least 8", a.at));
                    }
                    if wm < 2 {
                        return Err(LayoutError::at("wgmma needs at least 4 warps along dimension 0 (a warpgroup)", a.at));
                    }
                    let mut reg = vec![vec![0, 1], vec![8, 0]];
                    for j in 3..kn {
                        reg.push(vec![0, 1 << j]);
                    }
                    let mut b = Builder { rank, reg, lane, warp: vec![] };
                    for j in 0..wm {
                        b.warp.push(vec![16 << j, 0]);
                    }
                    for j in 0..wn {
                        b.warp.push(vec![0, n << j]);
                    }
                    b.finish(&[16 << wm, n << wn], shape, &[1, 0])
                }
                v => Err(LayoutError::at(format!("versionMajor = {v}: only 2 and 3 are supported"), a.at)),
            }
        }
        "dot_op" => {
            if rank != 2 {
                return Err(LayoutError::at("dot_op layouts are supported for rank 2", a.at));
            }
            let op = a.int("opIdx")?;
            let parent = a.attr("parent")?;
            if parent.name != "nvidia_mma" || parent.int("versionMajor")? != 2 {
                return Err(LayoutError::at("dot_op is supported with an nvidia_mma version 2 parent", parent.at));
            }
            let kw = a.int_or("kWidth", 2)?;
            let lk = log2(kw, "kWidth", a.at)?;
            let wpc = parent.list("warpsPerCTA")?;
            if wpc.len() != 2 {
                return Err(wrong_rank("warpsPerCTA", wpc.len()));
            }
            let (wm, wn) = (log2(wpc[0], "warpsPerCTA[0]", parent.at)?, log2(wpc[1], "warpsPerCTA[1]", parent.at)?);
            // (k, mn) pairs, placed as (mn, k) for A and (k, mn) for B.
            let place = |k: i64, mn: i64| if op == 0 { vec![mn, k] } else { vec![k, mn] };
            let mut reg: Vec<Vec<i64>> = (0..lk).map(|j| place(1 << j, 0)).collect();
            if op == 0 {
                reg.push(place(0, 8));
            }
            reg.push(place(4 * kw, 0));
            let lane = vec![place(kw, 0), place(2 * kw, 0), place(0, 1), place(0, 2), place(0, 4)];
            let mut b = Builder { rank, reg, lane, warp: vec![] };
            let mn_tile = if op == 0 { 16 } else { 8 };
            for j in 0..wn {
                b.warp.push(if op == 0 { vec![0, 0] } else { vec![0, 8 << j] });
            }
            for j in 0..wm {
                b.warp.push(if op == 0 { vec![16 << j, 0] } else { vec![0, 0] });
            }
            let k_tile = 8 * kw;
            let (tile, rep) = if op == 0 {
                ([mn_tile << wm, k_tile], [1usize, 0])
            } else {
                ([k_tile, mn_tile << wn], [0usize, 1])
            };
            match op {
                0 | 1 => b.finish(&tile, shape, &rep),
                _ => Err(LayoutError::at("opIdx is 0 (A) or 1 (B)", a.at)),
            }
        }
        "swizzled_shared" | "shared" => {
            if rank != 2 {
                return Err(LayoutError::at("shared layouts are supported for rank 2", a.at));
            }
            let vec_ = a.int_or("vec", 1)?;
            let per = a.int_or("perPhase", 1)?;
            let maxp = a.int_or("maxPhase", 1)?;
            let order: Vec<usize> = a.list("order")?.iter().map(|x| *x as usize).collect();
            check_order(&order, rank, a.at)?;
            shared(shape, order[0], vec_, per, maxp, None, a.at)
        }
        "nvmma_shared" => {
            if rank != 2 {
                return Err(LayoutError::at("shared layouts are supported for rank 2", a.at));
            }
            let width = a.int("swizzlingByteWidth")?;
            let bits = a.int_or("elementBitWidth", 16)?;
            let transposed = a.bool_or("transposed", false)?;
            if bits < 8 || bits % 8 != 0 {
                return Err(LayoutError::at("elementBitWidth must be a multiple of 8", a.at));
            }
            let elem = bits / 8;
            let minor = if transposed { 0 } else { 1 };
            let (per, maxp) = match width {
                0 => (1, 1),
                32 => (4, 2),
                64 => (2, 4),
                128 => (1, 8),
                w => return Err(LayoutError::at(format!("swizzlingByteWidth = {w}: expected 0, 32, 64 or 128"), a.at)),
            };
            let vec_ = (16 / elem).max(1);
            let cols = if width == 0 { shape[minor] } else { (width / elem).min(shape[minor]) };
            shared(shape, minor, vec_, per, maxp, Some(cols), a.at)
        }
        other => Err(LayoutError::at(
            format!("#ttg.{other} is not supported: blocked, linear, slice, nvidia_mma, dot_op, swizzled_shared and nvmma_shared are"),
            a.at,
        )),
    }
}

/// Offset → coordinate for a swizzled shared layout: the minor dimension's first `cols`
/// elements are contiguous; row `r` XORs its `vec`-groups with `(r floordiv per) mod maxp`;
/// further column blocks of `cols` follow all rows.
fn shared(
    shape: &[i64],
    minor: usize,
    vec_: i64,
    per: i64,
    maxp: i64,
    cols: Option<i64>,
    at: usize,
) -> Result<LinearLayout> {
    let major = 1 - minor;
    let cols = cols.unwrap_or(shape[minor]);
    let lc = log2(cols, "the swizzle width", at)?;
    log2(vec_, "vec", at)?;
    let lp = log2(per, "perPhase", at)?;
    let lm = log2(maxp, "maxPhase", at)?;
    if maxp > 1 && vec_ * maxp > cols {
        return Err(LayoutError::at(
            format!(
                "vec · maxPhase = {} exceeds the {cols} contiguous elements of a row",
                vec_ * maxp
            ),
            at,
        ));
    }
    let rows = log2(shape[major], "the rows", at)?;
    let mut bases = Vec::new();
    for j in 0..lc {
        bases.push(unit(2, minor, 1 << j));
    }
    for i in 0..rows {
        let mut b = unit(2, major, 1 << i);
        if i >= lp && i < lp + lm {
            b[minor] = vec_ << (i - lp);
        }
        bases.push(b);
    }
    let mut c = cols;
    while c < shape[minor] {
        bases.push(unit(2, minor, c));
        c *= 2;
    }
    LinearLayout::new(
        vec![("offset".into(), bases)],
        vec![("dim0".into(), shape[0]), ("dim1".into(), shape[1])],
    )
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn err(&self, m: &str) -> LayoutError {
        LayoutError::at(m, self.i).with_label(if self.i < self.s.len() {
            "here"
        } else {
            "the text ends here"
        })
    }
    fn eat(&mut self, t: &str) -> bool {
        self.ws();
        if self.s[self.i..].starts_with(t.as_bytes()) {
            self.i += t.len();
            true
        } else {
            false
        }
    }
    fn expect(&mut self, t: &str) -> Result<()> {
        if self.eat(t) {
            Ok(())
        } else {
            Err(self.err(&format!("expected `{t}`")))
        }
    }
    fn ident(&mut self) -> Result<String> {
        self.ws();
        let st = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        if st == self.i {
            return Err(self.err("expected a name"));
        }
        Ok(String::from_utf8_lossy(&self.s[st..self.i]).into_owned())
    }
    fn int(&mut self) -> Result<i64> {
        self.ws();
        let st = self.i;
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        let v = std::str::from_utf8(&self.s[st..self.i])
            .ok()
            .and_then(|t| t.parse().ok());
        // An integer may carry a type: `1 : i32`.
        if v.is_some() && self.eat(":") {
            self.ident()?;
        }
        v.ok_or_else(|| {
            self.i = st;
            self.err("expected an integer")
        })
    }
    fn attr(&mut self, depth: usize) -> Result<Attr> {
        self.ws();
        let at = self.i;
        if depth > 8 {
            return Err(LayoutError::at("attributes nest deeper than 8", at));
        }
        self.eat("#");
        let dialect = self.ident()?;
        if dialect != "ttg" && dialect != "triton_gpu" {
            return Err(LayoutError::at(
                format!("expected `#ttg.` (a TritonGPU attribute), found `{dialect}`"),
                at,
            ));
        }
        self.expect(".")?;
        let name = self.ident()?;
        self.expect("<")?;
        self.expect("{")?;
        let mut params = Vec::new();
        if !self.eat("}") {
            loop {
                let k = self.ident()?;
                self.expect("=")?;
                self.ws();
                let vat = self.i;
                let nested = self.s.get(self.i) == Some(&b'[') && {
                    let mut j = self.i + 1;
                    while self.s.get(j).is_some_and(|c| c.is_ascii_whitespace()) {
                        j += 1;
                    }
                    self.s.get(j) == Some(&b'[')
                };
                let v = if nested {
                    self.i += 1;
                    let mut vs = Vec::new();
                    loop {
                        self.expect("[")?;
                        let mut v = Vec::new();
                        if !self.eat("]") {
                            loop {
                                v.push(self.int()?);
                                if self.eat("]") {
                                    break;
                                }
                                self.expect(",")?;
                            }
                        }
                        vs.push(v);
                        if self.eat("]") {
                            break;
                        }
                        self.expect(",")?;
                    }
                    Val::Lists(vs, vat)
                } else if self.s.get(self.i) == Some(&b'[') {
                    self.i += 1;
                    let mut v = Vec::new();
                    if !self.eat("]") {
                        loop {
                            v.push(self.int()?);
                            if self.eat("]") {
                                break;
                            }
                            self.expect(",")?;
                        }
                    }
                    Val::List(v, vat)
                } else if self.s.get(self.i) == Some(&b'#') {
                    Val::Attr(Box::new(self.attr(depth + 1)?))
                } else if self.eat("true") {
                    Val::Bool(true, vat)
                } else if self.eat("false") {
                    Val::Bool(false, vat)
                } else {
                    Val::Int(self.int()?, vat)
                };
                params.push((k, v));
                if self.eat("}") {
                    break;
                }
                self.expect(",")?;
            }
        }
        self.expect(">")?;
        Ok(Attr { name, at, params })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_by_hand() {
        // 4 elements per thread along dim1, 8 lanes along dim1 then 4 along dim0, 2 warps
        // along dim0: a 8 x 32 tile, exactly the 8 x 32 tensor.
        let ll = parse(
            "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [2, 1], order = [1, 0]}>",
            &[8, 32],
        )
        .unwrap();
        // register 3, lane 9 (dim1 lane 1, dim0 lane 1), warp 1: row 1 + 4, column 4 + 3.
        assert_eq!(ll.eval(&[3, 9, 1, 0]), vec![5, 7]);
        // A 16 x 32 tensor: one more register bit, repeating along dim0.
        let ll = parse(
            "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [2, 1], order = [1, 0]}>",
            &[16, 32],
        )
        .unwrap();
        assert_eq!(ll.ins[0].1.last(), Some(&vec![8, 0]));
    }

    #[test]
    fn mma_v2_fragment() {
        let ll = parse("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 1], instrShape = [16, 8]}>", &[16, 8]).unwrap();
        // lane 5 = 4·1 + 1: rows 1 and 9, columns 2 and 3.
        let cells: Vec<Vec<i64>> = (0..4).map(|r| ll.eval(&[r, 5, 0, 0])).collect();
        assert_eq!(cells, vec![vec![1, 2], vec![1, 3], vec![9, 2], vec![9, 3]]);
    }

    #[test]
    fn errors_have_positions() {
        let e = parse(
            "#ttg.blocked<{sizePerThread = [1, 4] threadsPerWarp}>",
            &[8, 8],
        )
        .unwrap_err();
        assert_eq!(e.at, Some(37));
    }
}
