//! A map compiled for enumeration: its constraints and results flattened into one list of
//! register instructions, shared subexpressions computed once, so that the exact commands
//! (`equal`, `inverse`, `is_bijection`, `eval`) visit millions of points without a lookup
//! in the expression arena per node.
//!
//! ```text
//! (d0, d1) -> (d0 * 8 + d1, (d0 * 8 + d1) mod 3), domain: ..., d0 + d1 in [0, 9]
//!   r0 = d0, r1 = d1                       (the point)
//!   constraint 0:  r4 = r0 + r1            check r4 in [0, 9]
//!   results:       r5 = r0 * 8; r6 = r5 + r1; r7 = r6 mod 3   -> (r6, r7)
//! ```
//!
//! Constraints are checked in order and results evaluated only at points of the domain, as
//! [`IndexingMap::contains_point`] and [`crate::expr::eval`] do; arithmetic is checked the
//! same way (overflow and division by zero are errors, never wrapped values).

use super::IndexingMap;
use crate::expr::{arith, EvalError, Expr, ExprKind};
use crate::interval::Interval;
use std::collections::HashMap;

#[derive(Copy, Clone, Debug)]
enum Ins {
    Bin(crate::expr::Op, u32, u32, u32),
    /// A node this compiler does not know: evaluated by [`crate::expr::eval`] at the point.
    Generic(Expr, u32),
}

/// One map's constraints and results, ready to evaluate at many points.
#[derive(Clone, Debug)]
pub struct Compiled {
    n_vars: usize,
    code: Vec<Ins>,
    /// Per constraint: the end of its code in `code`, the register it leaves, its interval.
    constraints: Vec<(usize, u32, Interval)>,
    /// The registers of the results (computed by `code[results_start..]`).
    results: Vec<u32>,
    /// Per result, its operator (named by an overflow of its value past 64 bits).
    result_ops: Vec<&'static str>,
    results_start: usize,
    /// The initial register file: the point's slots, then the constants. Registers are
    /// 128 bits wide: intermediate values are exact (SPEC §2), only a result or a
    /// constraint's value is brought back to 64 bits.
    init: Vec<i128>,
}

struct Builder {
    n_vars: usize,
    code: Vec<Ins>,
    init: Vec<i128>,
    memo: HashMap<Expr, u32>,
}

impl Builder {
    fn reg(&mut self, value: i64) -> u32 {
        self.init.push(value.into());
        (self.init.len() - 1) as u32
    }
    fn emit(&mut self, e: Expr) -> u32 {
        if let Some(&r) = self.memo.get(&e) {
            return r;
        }
        #[allow(unreachable_patterns)]
        let r = match e.kind() {
            ExprKind::Const(c) => self.reg(c),
            ExprKind::Var(v) if (v as usize) < self.n_vars => v,
            ExprKind::Bin(op, a, b) => {
                let (ra, rb) = (self.emit(a), self.emit(b));
                let dst = self.reg(0);
                self.code.push(Ins::Bin(op, ra, rb, dst));
                dst
            }
            _ => {
                let dst = self.reg(0);
                self.code.push(Ins::Generic(e, dst));
                dst
            }
        };
        self.memo.insert(e, r);
        r
    }
}

impl Compiled {
    pub fn new(m: &IndexingMap) -> Compiled {
        let n_vars = m.num_vars();
        let mut b = Builder {
            n_vars,
            code: Vec::new(),
            init: vec![0; n_vars],
            memo: HashMap::new(),
        };
        let mut constraints = Vec::new();
        for &(e, iv) in &m.constraints {
            let r = b.emit(e);
            constraints.push((b.code.len(), r, iv));
        }
        let results_start = b.code.len();
        let results = m.results.iter().map(|&e| b.emit(e)).collect();
        let result_ops = m
            .results
            .iter()
            .map(|e| match e.kind() {
                ExprKind::Bin(op, ..) => op.symbol(),
                _ => "a result",
            })
            .collect();
        Compiled {
            n_vars,
            code: b.code,
            constraints,
            results,
            result_ops,
            results_start,
            init: b.init,
        }
    }

    /// A register file for [`Compiled::in_domain`] and [`Compiled::results`].
    pub fn registers(&self) -> Vec<i128> {
        self.init.clone()
    }

    fn run(&self, code: &[Ins], regs: &mut [i128]) -> Result<(), EvalError> {
        for ins in code {
            match *ins {
                Ins::Bin(op, a, b, dst) => {
                    regs[dst as usize] = arith::apply_wide(op, regs[a as usize], regs[b as usize])?
                }
                Ins::Generic(e, dst) => {
                    // the point's slots hold 64-bit values (loaded by `in_domain`)
                    let point: Vec<i64> = regs[..self.n_vars]
                        .iter()
                        .map(|&v| i64::try_from(v).unwrap_or_default())
                        .collect();
                    regs[dst as usize] = arith::eval_wide(e, &point)?
                }
            }
        }
        Ok(())
    }

    /// Whether `point` (within the variables' bounds: not checked here) meets every
    /// constraint. Loads the point into `regs`.
    pub fn in_domain(&self, point: &[i64], regs: &mut [i128]) -> Result<bool, EvalError> {
        for (r, &x) in regs[..self.n_vars].iter_mut().zip(&point[..self.n_vars]) {
            *r = x.into();
        }
        let mut start = 0;
        for &(end, r, iv) in &self.constraints {
            self.run(&self.code[start..end], regs)?;
            // a value past 64 bits lies outside every (64-bit) interval
            let v = regs[r as usize];
            if !(i128::from(iv.lo) <= v && v <= i128::from(iv.hi)) {
                return Ok(false);
            }
            start = end;
        }
        Ok(true)
    }

    /// The results at the point last given to [`Compiled::in_domain`] (which returned
    /// true), written to `out`.
    pub fn results(&self, regs: &mut [i128], out: &mut [i64]) -> Result<(), EvalError> {
        self.run(&self.code[self.results_start..], regs)?;
        for ((o, &r), &op) in out.iter_mut().zip(&self.results).zip(&self.result_ops) {
            *o = i64::try_from(regs[r as usize]).map_err(|_| EvalError::Overflow(op))?;
        }
        Ok(())
    }

    /// Operations evaluated per point (the enumeration's work per point, for its budget).
    pub fn work_per_point(&self) -> u64 {
        self.code.len() as u64 + 1
    }

    /// The results at a point of the domain, or `None` outside it (bounds included).
    pub fn eval(
        &self,
        m: &IndexingMap,
        point: &[i64],
        regs: &mut [i128],
        out: &mut [i64],
    ) -> Result<bool, EvalError> {
        if m.status != super::Status::Defined
            || point.len() != self.n_vars
            || !m.vars().zip(point).all(|(v, &x)| v.bounds.contains(x))
            || !self.in_domain(point, regs)?
        {
            return Ok(false);
        }
        self.results(regs, out)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::Variable;

    #[test]
    fn agrees_with_the_interpreter_at_every_point() {
        let (d0, d1, s0) = (Expr::var(0), Expr::var(1), Expr::var(2));
        let lin = d0.mul(Expr::constant(8)).add(d1);
        let m = IndexingMap::new(
            vec![Variable::new("d0", -3, 4), Variable::new("d1", 0, 7)],
            vec![Variable::new("s0", 0, 2)],
            vec![],
            vec![
                lin,
                lin.modulo(Expr::constant(3)),
                lin.floordiv(s0.add(Expr::constant(1))),
            ],
            vec![(d0.add(s0).sub(d1), Interval::new(-4, 3))],
        );
        let c = Compiled::new(&m);
        let mut regs = c.registers();
        let mut out = vec![0; 3];
        let mut seen = 0;
        super::super::enumerate::for_each_in_box(&m.bounds(), &mut |p| {
            let got = c.eval(&m, p, &mut regs, &mut out).expect("no overflow");
            let want = m.eval_point(p).expect("no overflow");
            assert_eq!(got.then(|| out.clone()), want, "at {p:?}");
            seen += 1;
            Ok(true)
        })
        .expect("a small box");
        assert_eq!(seen, 8 * 8 * 3);
    }
}
