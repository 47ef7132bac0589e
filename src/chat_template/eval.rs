//! Runs a lowered template over a context with Jinja's scoping rules (as CPython's Jinja
//! compiles them):
//!
//! - the template's top level is one scope: the context plus its `{% set %}`s;
//! - each iteration of a `{% for %}` is a fresh scope over the enclosing one (a `set`
//!   inside a loop is gone at the next iteration and after the loop);
//! - `{% if %}` opens no scope;
//! - a macro call is a fresh scope over the top level only (not the caller's scope).
//!
//! Work is bounded as the Python engine bounds it (loop iterations, size of every string
//! and list built, output size) plus a macro depth; past a bound the engine declines and
//! the Python engine raises its typed error.

use std::collections::HashMap;
use std::sync::Arc;

use super::ast::{
    Arg, BinOp, CallBlock, CmpOp, Expr, FilterCall, ForLoop, MacroDef, Stmt, Target,
    GENERATION_OWNER,
};
use super::builtins;
use super::value::{decline, dict_get, to_sstr, CallerRef, Decline, LoopInfo, Res, SStr, Value};

/// Bounds of one render (the Python engine's `TemplateLimits`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_iterations: i64,
    pub max_chars: usize,
}

const MAX_MACRO_DEPTH: u32 = 32;

/// Keyword arguments of a call, in order.
type Kwargs = Vec<(String, Value)>;

enum Flow {
    Normal,
    Break,
    Continue,
}

struct Frame {
    vars: Vec<(String, Value)>,
    parent: Option<usize>,
    /// Unique within the render (a `caller` checks its scope is still this frame).
    id: u64,
}

pub struct Eval {
    root: HashMap<String, Value>,
    frames: Vec<Frame>,
    cur: Option<usize>,
    iterations: i64,
    max_chars: usize,
    depth: u32,
    next_frame_id: u64,
}

/// A template constant as a value of this render. A string literal is copied rather than
/// shared: its `Arc` lives in the compiled template, and counting references on it from
/// two worker threads at once made the cache line bounce between cores on every
/// `message['role'] == 'user'` (measured: rendering on two threads cost up to 40% more
/// CPU than on one).
fn fresh_constant(v: &Value) -> Value {
    match v {
        Value::Str(s) => Value::Str(Arc::new(SStr::clone(s))),
        other => other.clone(),
    }
}

impl Eval {
    pub fn new(context: HashMap<String, Value>, limits: Limits) -> Eval {
        Eval {
            root: context,
            frames: Vec::new(),
            cur: None,
            iterations: limits.max_iterations,
            max_chars: limits.max_chars,
            depth: 0,
            next_frame_id: 0,
        }
    }

    pub fn run(&mut self, body: &[Stmt]) -> Res<SStr> {
        let mut out = SStr::default();
        match self.block(body, &mut out)? {
            Flow::Normal => Ok(out),
            _ => decline("break outside a loop"),
        }
    }

    // ------------------------------------------------------------------ scopes
    fn lookup(&self, name: &str) -> Option<Value> {
        let mut at = self.cur;
        while let Some(i) = at {
            let frame = &self.frames[i];
            if let Some((_, v)) = frame.vars.iter().rev().find(|(k, _)| k == name) {
                return Some(v.clone());
            }
            at = frame.parent;
        }
        self.root.get(name).cloned()
    }

    fn assign(&mut self, name: &str, value: Value) {
        match self.cur {
            None => {
                self.root.insert(name.to_string(), value);
            }
            Some(i) => {
                let vars = &mut self.frames[i].vars;
                match vars.iter_mut().find(|(k, _)| k == name) {
                    Some(slot) => slot.1 = value,
                    None => vars.push((name.to_string(), value)),
                }
            }
        }
    }

    fn push_frame(&mut self, parent: Option<usize>) -> Option<usize> {
        self.next_frame_id += 1;
        self.frames.push(Frame {
            vars: Vec::new(),
            parent,
            id: self.next_frame_id,
        });
        self.cur.replace(self.frames.len() - 1)
    }

    fn pop_frame(&mut self, saved: Option<usize>) {
        self.frames.pop();
        self.cur = saved;
    }

    fn bind(&mut self, target: &Target, value: Value) -> Res<()> {
        match target {
            Target::Name(name) => self.assign(name, value),
            Target::Attr(var, attr) => match self.lookup(var) {
                Some(Value::Namespace(ns)) => {
                    if attr.starts_with('_') {
                        return decline("an underscore namespace attribute");
                    }
                    let mut attrs = ns.lock().map_err(|_| Decline("namespace lock".into()))?;
                    match attrs.iter_mut().find(|(k, _)| k == attr) {
                        Some(slot) => slot.1 = value,
                        None => attrs.push((attr.clone(), value)),
                    }
                }
                _ => return decline("attribute assignment to a non-namespace"),
            },
            Target::Tuple(names) => {
                let items = unpack(&value, names.len())?;
                for (name, item) in names.iter().zip(items) {
                    self.assign(name, item);
                }
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------ statements
    fn block(&mut self, body: &[Stmt], out: &mut SStr) -> Res<Flow> {
        for stmt in body {
            match self.stmt(stmt, out)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    fn emit(&self, out: &mut SStr, piece: &SStr) -> Res<()> {
        out.push(piece);
        self.check_size(out.text.len())
    }

    /// Bytes bound the Python engine's character count from above, so a string within
    /// the limit in bytes is within it in characters; one over it in bytes is counted.
    pub fn check_size(&self, bytes: usize) -> Res<()> {
        if bytes > self.max_chars {
            return decline("a string over the output limit");
        }
        Ok(())
    }

    fn stmt(&mut self, stmt: &Stmt, out: &mut SStr) -> Res<Flow> {
        match stmt {
            Stmt::Raw(text) => {
                out.text.push_str(text);
                self.check_size(out.text.len())?;
            }
            Stmt::Emit(expr) => {
                let value = self.expr(expr)?;
                match &value {
                    Value::Str(s) => self.emit(out, s)?,
                    other => self.emit(out, &to_sstr(other)?)?,
                }
            }
            Stmt::If(cond, then, otherwise) => {
                let branch = if self.expr(cond)?.truthy() {
                    then
                } else {
                    otherwise
                };
                return self.block(branch, out);
            }
            Stmt::Set(target, expr) => {
                let value = self.expr(expr)?;
                self.bind(target, value)?;
            }
            Stmt::SetBlock(target, filters, body) => {
                let value = self.filtered_block(filters, body)?;
                self.bind(target, value)?;
            }
            Stmt::FilterBlock(filters, body) => {
                // Jinja writes the filtered value as it is (no `str()`): a value that is
                // not a string fails its output join.
                match self.filtered_block(filters, body)? {
                    Value::Str(s) => self.emit(out, &s)?,
                    Value::Markup(m) => self.emit(out, &SStr::plain(m.to_string()))?,
                    _ => return decline("a filter block that gives a non-string"),
                }
            }
            Stmt::Generation(body) => {
                let mut buf = self.inner_block(body, "a generation block")?;
                if !buf.text.is_empty() {
                    buf.spans.push((0, buf.text.len() as u32, GENERATION_OWNER));
                }
                self.emit(out, &buf)?;
            }
            Stmt::CallBlock(c) => match self.call_block(c)? {
                Value::Str(s) => self.emit(out, &s)?,
                _ => return decline("a call block that gives a non-string"),
            },
            Stmt::Macro(def) => self.assign(&def.name, Value::Macro(Arc::new(def.clone()))),
            Stmt::For(f) => self.for_loop(f, out)?,
            Stmt::Break => return Ok(Flow::Break),
            Stmt::Continue => return Ok(Flow::Continue),
        }
        Ok(Flow::Normal)
    }

    /// The output of `body` run in an inner scope (a set, filter or generation block).
    fn inner_block(&mut self, body: &[Stmt], what: &str) -> Res<SStr> {
        let mut buf = SStr::default();
        let saved = self.push_frame(self.cur);
        let flow = self.block(body, &mut buf);
        self.pop_frame(saved);
        if !matches!(flow?, Flow::Normal) {
            return decline(format!("a loop control inside {what}"));
        }
        Ok(buf)
    }

    /// A set or filter block's body in an inner scope, its filters applied in order (their
    /// arguments read in that scope, after the body, as Jinja compiles them).
    fn filtered_block(&mut self, filters: &[FilterCall], body: &[Stmt]) -> Res<Value> {
        let mut buf = SStr::default();
        let saved = self.push_frame(self.cur);
        let result = self.block(body, &mut buf).and_then(|flow| {
            if !matches!(flow, Flow::Normal) {
                return decline("a loop control inside a set or filter block");
            }
            let mut value = Value::sstr(std::mem::take(&mut buf));
            for (name, args) in filters {
                let (pos, kw) = self.args(args)?;
                value = builtins::filter(self, name, value, &pos, &kw)?;
                self.check_built(&value)?;
            }
            Ok(value)
        });
        self.pop_frame(saved);
        result
    }

    /// `{% call m(args) %}`: the macro called with the block's body as `caller`.
    fn call_block(&mut self, c: &CallBlock) -> Res<Value> {
        let f = self.expr(&c.callee)?;
        let (pos, mut kw) = self.args(&c.args)?;
        let Value::Macro(def) = f else {
            return decline("a call block of something other than a macro");
        };
        if kw.iter().any(|(k, _)| k == "caller") {
            return decline("a call block passing caller twice");
        }
        let scope = self.cur.map(|i| (i, self.frames[i].id));
        let caller = CallerRef {
            def: c.caller.clone(),
            scope,
        };
        kw.push(("caller".to_string(), Value::Caller(Arc::new(caller))));
        self.call_macro(&def, pos, kw, None)
    }

    fn for_loop(&mut self, f: &ForLoop, out: &mut SStr) -> Res<()> {
        let iterable = self.expr(&f.iter)?;
        let items = builtins::iterate(&iterable)?;
        self.iterations -= items.len() as i64;
        if self.iterations < 0 {
            return decline("over the loop-iteration limit");
        }
        let items = match &f.filter {
            None => items,
            Some(cond) => {
                let mut kept = Vec::with_capacity(items.len());
                for item in items {
                    let saved = self.push_frame(self.cur);
                    let keep = self
                        .bind(&f.target, item.clone())
                        .and_then(|_| self.expr(cond));
                    self.pop_frame(saved);
                    if keep?.truthy() {
                        kept.push(item);
                    }
                }
                kept
            }
        };
        let length = items.len();
        // Jinja's `{% else %}` runs unless an iteration reached the end of the body (its
        // flag is reset there): a loop whose every iteration ends in `continue` or
        // `break` runs it too.
        let mut completed = false;
        for (index0, item) in items.iter().enumerate() {
            let info = LoopInfo {
                index0,
                length,
                prev: index0.checked_sub(1).map(|i| items[i].clone()),
                next: items.get(index0 + 1).cloned(),
            };
            let saved = self.push_frame(self.cur);
            let result = self.bind(&f.target, item.clone()).and_then(|_| {
                self.assign("loop", Value::Loop(Arc::new(info)));
                self.block(&f.body, out)
            });
            self.pop_frame(saved);
            match result? {
                Flow::Break => break,
                Flow::Continue => {}
                Flow::Normal => completed = true,
            }
        }
        if !completed && !f.else_body.is_empty() {
            let saved = self.push_frame(self.cur);
            let flow = self.block(&f.else_body, out);
            self.pop_frame(saved);
            if !matches!(flow?, Flow::Normal) {
                return decline("a loop control in a loop's else block");
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------ expressions
    pub fn expr(&mut self, e: &Expr) -> Res<Value> {
        match e {
            Expr::Var(name) => self.var(name),
            Expr::Const(v) => Ok(fresh_constant(v)),
            Expr::Not(inner) => Ok(Value::Bool(!self.expr(inner)?.truthy())),
            Expr::Neg(inner) => builtins::negate(&self.expr(inner)?),
            Expr::Bin(BinOp::And, l, r) => {
                let left = self.expr(l)?;
                if left.truthy() {
                    self.expr(r)
                } else {
                    Ok(left)
                }
            }
            Expr::Bin(BinOp::Or, l, r) => {
                let left = self.expr(l)?;
                if left.truthy() {
                    Ok(left)
                } else {
                    self.expr(r)
                }
            }
            Expr::Bin(op, l, r) => {
                let (left, right) = (self.expr(l)?, self.expr(r)?);
                let out = builtins::binary(*op, left, &right)?;
                self.check_built(&out)?;
                Ok(out)
            }
            Expr::Compare(first, ops) => {
                let mut left = self.expr(first)?;
                for (op, next) in ops {
                    let right = self.expr(next)?;
                    if !compare(*op, &left, &right)? {
                        return Ok(Value::Bool(false));
                    }
                    left = right;
                }
                Ok(Value::Bool(true))
            }
            Expr::IfExpr(test, then, otherwise) => {
                if self.expr(test)?.truthy() {
                    self.expr(then)
                } else {
                    match otherwise {
                        Some(e) => self.expr(e),
                        None => Ok(Value::Undefined),
                    }
                }
            }
            Expr::Filter(name, inner, args) => self.filter(name, inner, args),
            Expr::Test(name, inner, args) => {
                let value = self.expr(inner)?;
                let (pos, kw) = self.args(args)?;
                if !kw.is_empty() {
                    return decline("keyword arguments to a test");
                }
                Ok(Value::Bool(builtins::test(name, &value, &pos)?))
            }
            Expr::Attr(inner, name) => builtins::get_attr(&self.expr(inner)?, name),
            Expr::Item(inner, sub) => {
                let obj = self.expr(inner)?;
                let key = self.expr(sub)?;
                builtins::get_item(&obj, &key)
            }
            Expr::Slice(parts) => {
                let [obj, start, stop, step] = &**parts;
                let obj = self.expr(obj.as_ref().expect("slice object"))?;
                let mut bound = |e: &Option<Expr>| e.as_ref().map(|e| self.expr(e)).transpose();
                let (a, b, c) = (bound(start)?, bound(stop)?, bound(step)?);
                builtins::slice(&obj, a, b, c)
            }
            Expr::Call(callee, args) => self.call(callee, args),
            Expr::List(items) => Ok(Value::List(Arc::new(self.exprs(items)?))),
            Expr::Tuple(items) => Ok(Value::Tuple(Arc::new(self.exprs(items)?))),
            Expr::Map(pairs) => {
                let mut out: Vec<(Value, Value)> = Vec::with_capacity(pairs.len());
                for (k, v) in pairs {
                    let key = self.expr(k)?;
                    if !matches!(key, Value::Str(_)) {
                        return decline("a dict literal key that is not a string");
                    }
                    let value = self.expr(v)?;
                    match out.iter_mut().find(|(x, _)| x.as_text() == key.as_text()) {
                        Some(slot) => slot.1 = value,
                        None => out.push((key, value)),
                    }
                }
                Ok(Value::Dict(Arc::new(out)))
            }
        }
    }

    fn exprs(&mut self, items: &[Expr]) -> Res<Vec<Value>> {
        items.iter().map(|i| self.expr(i)).collect()
    }

    fn var(&self, name: &str) -> Res<Value> {
        if let Some(v) = self.lookup(name) {
            return Ok(v);
        }
        Ok(match name {
            "namespace" => Value::Global(super::value::Global::Namespace),
            "range" => Value::Global(super::value::Global::Range),
            "dict" => Value::Global(super::value::Global::Dict),
            "raise_exception" => Value::Global(super::value::Global::RaiseException),
            "strftime_now" => Value::Global(super::value::Global::StrftimeNow),
            // Jinja's other globals and names it treats specially are not modelled.
            "lipsum" | "cycler" | "joiner" | "caller" | "varargs" | "kwargs" | "self"
            | "context" | "environment" => return decline(format!("the name {name}")),
            _ => Value::Undefined,
        })
    }

    /// Strings and lists built by operators and filters stay within the output limit.
    fn check_built(&self, v: &Value) -> Res<()> {
        match v {
            Value::Str(s) => self.check_size(s.text.len()),
            Value::List(items) | Value::Tuple(items) => self.check_size(items.len()),
            _ => Ok(()),
        }
    }

    fn args(&mut self, args: &[Arg]) -> Res<(Vec<Value>, Kwargs)> {
        let mut pos = Vec::new();
        let mut kw: Vec<(String, Value)> = Vec::new();
        for a in args {
            match a {
                Arg::Pos(e) => {
                    if !kw.is_empty() {
                        return decline("a positional argument after a keyword");
                    }
                    pos.push(self.expr(e)?);
                }
                Arg::Kw(name, e) => {
                    if kw.iter().any(|(k, _)| k == name) {
                        return decline("a repeated keyword argument");
                    }
                    kw.push((name.clone(), self.expr(e)?));
                }
            }
        }
        Ok((pos, kw))
    }

    fn filter(&mut self, name: &str, inner: &Expr, args: &[Arg]) -> Res<Value> {
        let value = self.expr(inner)?;
        let (pos, kw) = self.args(args)?;
        let out = builtins::filter(self, name, value, &pos, &kw)?;
        self.check_built(&out)?;
        Ok(out)
    }

    fn call(&mut self, callee: &Expr, args: &[Arg]) -> Res<Value> {
        if let Expr::Attr(obj, name) = callee {
            let obj = self.expr(obj)?;
            let (pos, kw) = self.args(args)?;
            let out = builtins::call_method(&obj, name, &pos, &kw)?;
            self.check_built(&out)?;
            return Ok(out);
        }
        let f = self.expr(callee)?;
        let (pos, kw) = self.args(args)?;
        match f {
            Value::Macro(def) => self.call_macro(&def, pos, kw, None),
            Value::Caller(c) => {
                // The caller's scope must still be live (the call block is running).
                let parent = match c.scope {
                    None => None,
                    Some((i, id)) if self.frames.get(i).is_some_and(|f| f.id == id) => Some(i),
                    Some(_) => return decline("a caller called after its call block"),
                };
                self.call_macro(&c.def, pos, kw, parent)
            }
            Value::Global(g) => builtins::call_global(self, g, &pos, &kw),
            Value::Method(m) => builtins::call_method(&m.0, &m.1, &pos, &kw),
            other => decline(format!("a call of {}", other.type_name())),
        }
    }

    /// Calls a macro (or a `caller`) in a fresh scope over `parent` (None: the top level,
    /// a macro's closure; a caller's is its call block's scope).
    pub fn call_macro(
        &mut self,
        def: &MacroDef,
        pos: Vec<Value>,
        kw: Vec<(String, Value)>,
        parent: Option<usize>,
    ) -> Res<Value> {
        if pos.len() > def.params.len() {
            return decline("too many macro arguments");
        }
        for (k, _) in &kw {
            let known = def.params.contains(k) || (def.implicit_caller && k == "caller");
            if !known {
                return decline("an unknown macro keyword");
            }
        }
        if self.depth >= MAX_MACRO_DEPTH {
            return decline("macro recursion");
        }
        self.depth += 1;
        let saved = self.push_frame(parent);
        let result = self.macro_body(def, pos, kw);
        self.pop_frame(saved);
        self.depth -= 1;
        result
    }

    fn macro_body(
        &mut self,
        def: &MacroDef,
        pos: Vec<Value>,
        kw: Vec<(String, Value)>,
    ) -> Res<Value> {
        let first_default = def.params.len() - def.defaults.len();
        let given = pos.len();
        for (i, name) in def.params.iter().enumerate() {
            let by_name = kw.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
            let value = if i < given {
                if by_name.is_some() {
                    return decline("a macro argument given twice");
                }
                pos[i].clone()
            } else if let Some(v) = by_name {
                v
            } else if i >= first_default {
                self.expr(&def.defaults[i - first_default])?
            } else {
                Value::Undefined
            };
            self.assign(name, value);
        }
        if def.implicit_caller {
            // Jinja's implicit `caller` argument: the call block's body, else undefined.
            let caller = kw
                .iter()
                .find(|(k, _)| k == "caller")
                .map_or(Value::Undefined, |(_, v)| v.clone());
            self.assign("caller", caller);
        }
        let mut buf = SStr::default();
        match self.block(&def.body, &mut buf)? {
            Flow::Normal => Ok(Value::sstr(buf)),
            _ => decline("break outside a loop"),
        }
    }
}

/// `a, b = value` (Python's unpacking of a sequence of exactly `n` items).
fn unpack(value: &Value, n: usize) -> Res<Vec<Value>> {
    let items = match value {
        Value::List(v) | Value::Tuple(v) => v.to_vec(),
        _ => return decline("unpacking a value that is not a list or tuple"),
    };
    if items.len() != n {
        return decline("unpacking the wrong number of items");
    }
    Ok(items)
}

/// One comparison of a chain (`a < b`, `x in y`, ...).
pub fn compare(op: CmpOp, left: &Value, right: &Value) -> Res<bool> {
    use std::cmp::Ordering::*;
    Ok(match op {
        CmpOp::Eq => left.py_eq(right)?,
        CmpOp::Ne => !left.py_eq(right)?,
        CmpOp::Lt => left.py_cmp(right)? == Less,
        CmpOp::Lte => left.py_cmp(right)? != Greater,
        CmpOp::Gt => left.py_cmp(right)? == Greater,
        CmpOp::Gte => left.py_cmp(right)? != Less,
        CmpOp::In => contains(right, left)?,
        CmpOp::NotIn => !contains(right, left)?,
    })
}

/// Python's `needle in haystack`.
pub fn contains(haystack: &Value, needle: &Value) -> Res<bool> {
    match haystack {
        Value::Str(_) | Value::Markup(_) => match needle.as_text() {
            Some(n) => Ok(haystack.as_text().expect("text").contains(n)),
            None => decline("'in <string>' with a non-string"),
        },
        Value::List(items) | Value::Tuple(items) | Value::View(items) => {
            for item in items.iter() {
                if item.py_eq(needle)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Value::Dict(pairs) => Ok(dict_get(pairs, needle)?.is_some()),
        // Jinja's undefined iterates as empty.
        Value::Undefined => Ok(false),
        other => decline(format!("'in' on {}", other.type_name())),
    }
}
