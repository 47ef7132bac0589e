//! The template tree this engine runs: minijinja's parse, lowered into owned nodes.
//!
//! Lowering refuses (at compile time) every construct this engine does not model:
//! template inheritance and includes, blocks, with/autoescape blocks, `{% do %}` (Jinja
//! without the `do` extension rejects it), recursive loops, macros defined inside another
//! block, and splatted arguments. String literals are re-read from the source with
//! Python's escape rules, which Jinja's lexer applies.
//!
//! transformers' `{% generation %}...{% endgeneration %}` tag (which minijinja does not
//! know) is rewritten before parsing into a filter block of a reserved filter name with
//! the same whitespace markers, and lowered into [`Stmt::Generation`].

use std::sync::Arc;

use minijinja::machinery::ast as mj;

use super::value::{decline, Res, Value};

#[derive(Debug)]
pub enum Stmt {
    Raw(String),
    Emit(Expr),
    For(Box<ForLoop>),
    If(Box<Expr>, Vec<Stmt>, Vec<Stmt>),
    Set(Target, Expr),
    /// `{% set x | f %}...{% endset %}`: the filters applied in order (none: plain).
    SetBlock(Target, Vec<FilterCall>, Vec<Stmt>),
    /// `{% filter f|g %}...{% endfilter %}`.
    FilterBlock(Vec<FilterCall>, Vec<Stmt>),
    /// `{% call(params) m(args) %}...{% endcall %}`.
    CallBlock(Box<CallBlock>),
    /// transformers' `{% generation %}...{% endgeneration %}`: the body's output marked
    /// as assistant-generated (a span of [`GENERATION_OWNER`]).
    Generation(Vec<Stmt>),
    Macro(Arc<MacroDef>),
    Break,
    Continue,
}

#[derive(Debug)]
pub struct ForLoop {
    pub target: Target,
    pub iter: Expr,
    pub filter: Option<Expr>,
    pub body: Vec<Stmt>,
    pub else_body: Vec<Stmt>,
}

/// The owner of the spans that mark `{% generation %}` output (the Python engine's
/// `jinja_env.GENERATION_OWNER`).
pub const GENERATION_OWNER: i32 = -2;

/// The filter name a `{% generation %}` tag is rewritten to before parsing.
const GENERATION_FILTER: &str = "__tokenpact_generation__";

/// One filter of a filter block's chain: its name and arguments.
pub type FilterCall = (String, Vec<Arg>);

#[derive(Debug)]
pub struct MacroDef {
    pub name: String,
    pub params: Vec<String>,
    /// Defaults of the last `defaults.len()` parameters.
    pub defaults: Vec<Expr>,
    pub body: Vec<Stmt>,
    /// The body reads `caller` and no parameter is named so: Jinja gives the macro an
    /// implicit `caller` argument (a call block's body, else undefined).
    pub implicit_caller: bool,
}

#[derive(Debug)]
pub struct CallBlock {
    pub callee: Expr,
    pub args: Vec<Arg>,
    /// The block's body as the `caller` macro (its parameters from `{% call(...) %}`).
    pub caller: Arc<MacroDef>,
}

#[derive(Debug)]
pub enum Target {
    Name(String),
    /// `{% set ns.attr = ... %}`
    Attr(String, String),
    Tuple(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Rem,
    Pow,
    Concat,
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Lte,
    Gt,
    Gte,
    In,
    NotIn,
}

#[derive(Debug)]
pub enum Arg {
    Pos(Expr),
    Kw(String, Expr),
}

#[derive(Debug)]
pub enum Expr {
    Var(String),
    Const(Value),
    Slice(Box<[Option<Expr>; 4]>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    IfExpr(Box<Expr>, Box<Expr>, Option<Box<Expr>>),
    Filter(String, Box<Expr>, Vec<Arg>),
    Test(String, Box<Expr>, Vec<Arg>),
    Attr(Box<Expr>, String),
    Item(Box<Expr>, Box<Expr>),
    Call(Box<Expr>, Vec<Arg>),
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
}

/// Names Jinja binds to undefined when the template starts, instead of resolving them
/// from the context: those whose first occurrence in the top-level scope is a `set`
/// (or a `set` in every branch of an `if`), as Jinja's symbol analysis decides. A loop or
/// macro body that reads one before that `set` runs sees it undefined.
pub fn undefined_at_start(body: &[Stmt]) -> Vec<String> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    scan_root(body, &mut seen, &mut out);
    out
}

fn scan_root(body: &[Stmt], seen: &mut Vec<String>, out: &mut Vec<String>) {
    let store = |name: &String, seen: &mut Vec<String>, out: &mut Vec<String>| {
        if !seen.contains(name) {
            seen.push(name.clone());
            out.push(name.clone());
        }
    };
    for stmt in body {
        match stmt {
            Stmt::Emit(e) => loads(e, seen),
            // `{% set ns.attr = ... %}` reads `ns` (Jinja's symbol analysis loads it).
            Stmt::Set(Target::Attr(ns, _), e) => {
                loads(e, seen);
                loads(&Expr::Var(ns.clone()), seen);
            }
            Stmt::Set(target, e) => {
                loads(e, seen);
                for name in target_names(target) {
                    store(name, seen, out);
                }
            }
            // (a set block's filters are read in the block's own scope, as its body is)
            Stmt::SetBlock(target, _, _) => {
                for name in target_names(target) {
                    store(name, seen, out);
                }
            }
            // Jinja's symbol analysis reads a filter block's filters and a call block's
            // call in this scope; their bodies are inner scopes (like a loop's).
            Stmt::FilterBlock(filters, _) => filter_loads(filters, seen),
            Stmt::CallBlock(c) => {
                loads(&c.callee, seen);
                for a in &c.args {
                    match a {
                        Arg::Pos(x) | Arg::Kw(_, x) => loads(x, seen),
                    }
                }
            }
            Stmt::Generation(_) => {}
            Stmt::Macro(def) => store(&def.name, seen, out),
            Stmt::For(f) => loads(&f.iter, seen),
            Stmt::If(test, then, otherwise) => {
                loads(test, seen);
                let (mut seen_a, mut out_a) = (seen.clone(), Vec::new());
                scan_root(then, &mut seen_a, &mut out_a);
                let (mut seen_b, mut out_b) = (seen.clone(), Vec::new());
                scan_root(otherwise, &mut seen_b, &mut out_b);
                // Stored first in both branches: undefined at the start; in one: resolved.
                out.extend(out_a.iter().filter(|n| out_b.contains(n)).cloned());
                for name in seen_a.into_iter().chain(seen_b) {
                    if !seen.contains(&name) {
                        seen.push(name);
                    }
                }
            }
            Stmt::Raw(_) | Stmt::Break | Stmt::Continue => {}
        }
    }
}

fn filter_loads(filters: &[FilterCall], seen: &mut Vec<String>) {
    for (_, args) in filters {
        for a in args {
            match a {
                Arg::Pos(x) | Arg::Kw(_, x) => loads(x, seen),
            }
        }
    }
}

/// Whether `body` reads the name `name` anywhere (nested blocks and call-block bodies
/// included), as Jinja's `find_undeclared` decides a macro's implicit `caller`.
fn reads_name(body: &[Stmt], name: &str) -> bool {
    let mut seen = Vec::new();
    let mut exprs: Vec<&Expr> = Vec::new();
    let mut stack: Vec<&[Stmt]> = vec![body];
    while let Some(stmts) = stack.pop() {
        for stmt in stmts {
            match stmt {
                Stmt::Raw(_) | Stmt::Break | Stmt::Continue => {}
                Stmt::Emit(e) => exprs.push(e),
                Stmt::Set(_, e) => exprs.push(e),
                Stmt::For(f) => {
                    exprs.push(&f.iter);
                    exprs.extend(f.filter.as_ref());
                    stack.push(&f.body);
                    stack.push(&f.else_body);
                }
                Stmt::If(c, a, b) => {
                    exprs.push(c);
                    stack.push(a);
                    stack.push(b);
                }
                Stmt::SetBlock(_, filters, b) | Stmt::FilterBlock(filters, b) => {
                    for (_, args) in filters {
                        exprs.extend(args.iter().map(|a| match a {
                            Arg::Pos(x) | Arg::Kw(_, x) => x,
                        }));
                    }
                    stack.push(b);
                }
                Stmt::CallBlock(c) => {
                    exprs.push(&c.callee);
                    exprs.extend(c.args.iter().map(|a| match a {
                        Arg::Pos(x) | Arg::Kw(_, x) => x,
                    }));
                    stack.push(&c.caller.body);
                }
                Stmt::Generation(b) => stack.push(b),
                Stmt::Macro(m) => stack.push(&m.body),
            }
        }
    }
    for e in exprs {
        loads(e, &mut seen);
    }
    seen.iter().any(|n| n == name)
}

/// `source` with transformers' `{% generation %}` / `{% endgeneration %}` tags rewritten
/// as a filter block of [`GENERATION_FILTER`] (whitespace markers kept), and how many
/// tags were rewritten.
fn rewrite_generation_tags(source: &str) -> (std::borrow::Cow<'_, str>, usize) {
    if !source.contains("generation") {
        return (std::borrow::Cow::Borrowed(source), 0);
    }
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len() + 64);
    let (mut at, mut copied, mut count) = (0usize, 0usize, 0usize);
    while let Some(found) = source[at..].find("{%") {
        let start = at + found;
        let mut i = start + 2;
        let marker_open = match bytes.get(i) {
            Some(b'-') | Some(b'+') => {
                i += 1;
                &source[i - 1..i]
            }
            _ => "",
        };
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let word_start = i;
        while bytes
            .get(i)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            i += 1;
        }
        let word = &source[word_start..i];
        if word != "generation" && word != "endgeneration" {
            at = start + 2;
            continue;
        }
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let marker_close = match bytes.get(i) {
            Some(b'-') | Some(b'+') => {
                i += 1;
                &source[i - 1..i]
            }
            _ => "",
        };
        if !source[i..].starts_with("%}") {
            at = start + 2;
            continue;
        }
        out.push_str(&source[copied..start]);
        out.push_str("{%");
        out.push_str(marker_open);
        if word == "generation" {
            out.push_str(" filter ");
            out.push_str(GENERATION_FILTER);
            out.push(' ');
        } else {
            out.push_str(" endfilter ");
        }
        out.push_str(marker_close);
        out.push_str("%}");
        copied = i + 2;
        at = copied;
        count += 1;
    }
    if count == 0 {
        return (std::borrow::Cow::Borrowed(source), 0);
    }
    out.push_str(&source[copied..]);
    (std::borrow::Cow::Owned(out), count)
}

fn count_generation(body: &[Stmt]) -> usize {
    let mut n = 0;
    let mut stack: Vec<&[Stmt]> = vec![body];
    while let Some(stmts) = stack.pop() {
        for stmt in stmts {
            match stmt {
                Stmt::Generation(b) => {
                    n += 1;
                    stack.push(b);
                }
                Stmt::For(f) => {
                    stack.push(&f.body);
                    stack.push(&f.else_body);
                }
                Stmt::If(_, a, b) => {
                    stack.push(a);
                    stack.push(b);
                }
                Stmt::SetBlock(_, _, b) | Stmt::FilterBlock(_, b) => stack.push(b),
                Stmt::CallBlock(c) => stack.push(&c.caller.body),
                Stmt::Macro(m) => stack.push(&m.body),
                _ => {}
            }
        }
    }
    n
}

/// Whether the compiled template has `{% generation %}` blocks.
pub fn has_generation(body: &[Stmt]) -> bool {
    count_generation(body) > 0
}

fn target_names(t: &Target) -> Vec<&String> {
    match t {
        Target::Name(n) => vec![n],
        Target::Attr(..) => vec![],
        Target::Tuple(names) => names.iter().collect(),
    }
}

/// Marks the names `e` reads as seen (their first occurrence is a load).
fn loads(e: &Expr, seen: &mut Vec<String>) {
    let mut visit = |name: &String| {
        if !seen.contains(name) {
            seen.push(name.clone());
        }
    };
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Var(n) => visit(n),
            Expr::Const(_) => {}
            Expr::Slice(parts) => stack.extend(parts.iter().flatten()),
            Expr::Not(x) | Expr::Neg(x) | Expr::Attr(x, _) => stack.push(x),
            Expr::Bin(_, a, b) | Expr::Item(a, b) => stack.extend([&**a, &**b]),
            Expr::Compare(a, ops) => {
                stack.push(a);
                stack.extend(ops.iter().map(|(_, x)| x));
            }
            Expr::IfExpr(a, b, c) => {
                stack.extend([&**a, &**b]);
                stack.extend(c.as_deref());
            }
            Expr::Filter(_, x, args) | Expr::Test(_, x, args) | Expr::Call(x, args) => {
                stack.push(x);
                stack.extend(args.iter().map(|a| match a {
                    Arg::Pos(x) | Arg::Kw(_, x) => x,
                }));
            }
            Expr::List(items) | Expr::Tuple(items) => stack.extend(items.iter()),
            Expr::Map(pairs) => stack.extend(pairs.iter().flat_map(|(k, v)| [k, v])),
        }
    }
}

/// Parses `source` as Jinja with `trim_blocks` and `lstrip_blocks` (transformers'
/// environment) and lowers it.
pub fn compile(source: &str) -> Res<Vec<Stmt>> {
    if source.contains('\r') {
        // Jinja's lexer turns "\r\n" and "\r" into "\n" in text and string literals;
        // minijinja keeps them.
        return decline("a template with carriage returns");
    }
    let mut builder = minijinja::syntax::SyntaxConfig::builder();
    builder
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(false);
    let syntax = builder
        .build()
        .map_err(|e| super::value::Decline(e.to_string()))?;
    let (source, tags) = rewrite_generation_tags(source);
    if tags > 0 && source.contains("raw") {
        // A tag inside `{% raw %}` is text to Jinja: left to the Python engine.
        return decline("generation tags beside a raw block");
    }
    let tree = minijinja::machinery::parse(&source, "<chat template>", syntax)
        .map_err(|e| super::value::Decline(format!("parse: {e}")))?;
    let lower = Lower { source: &source };
    let body = match &tree {
        mj::Stmt::Template(t) => lower.stmts(&t.children, 0)?,
        _ => return decline("not a template"),
    };
    // Every rewritten tag pair became one block (a tag inside a comment or a string
    // literal would not have: that template is left to the Python engine).
    if 2 * count_generation(&body) != tags {
        return decline("generation tags outside template code");
    }
    Ok(body)
}

struct Lower<'s> {
    source: &'s str,
}

impl Lower<'_> {
    fn stmts(&self, nodes: &[mj::Stmt<'_>], depth: usize) -> Res<Vec<Stmt>> {
        nodes.iter().map(|n| self.stmt(n, depth)).collect()
    }

    fn stmt(&self, node: &mj::Stmt<'_>, depth: usize) -> Res<Stmt> {
        Ok(match node {
            mj::Stmt::EmitRaw(r) => Stmt::Raw(r.raw.to_string()),
            mj::Stmt::EmitExpr(e) => Stmt::Emit(self.expr(&e.expr)?),
            mj::Stmt::ForLoop(f) => {
                if f.recursive {
                    return decline("recursive loop");
                }
                Stmt::For(Box::new(ForLoop {
                    target: self.target(&f.target)?,
                    iter: self.expr(&f.iter)?,
                    filter: f.filter_expr.as_ref().map(|e| self.expr(e)).transpose()?,
                    body: self.stmts(&f.body, depth + 1)?,
                    else_body: self.stmts(&f.else_body, depth + 1)?,
                }))
            }
            mj::Stmt::IfCond(c) => Stmt::If(
                Box::new(self.expr(&c.expr)?),
                self.stmts(&c.true_body, depth)?,
                self.stmts(&c.false_body, depth)?,
            ),
            mj::Stmt::Set(s) => Stmt::Set(self.target(&s.target)?, self.expr(&s.expr)?),
            mj::Stmt::SetBlock(s) => Stmt::SetBlock(
                self.target(&s.target)?,
                match &s.filter {
                    Some(chain) => self.filter_chain(chain)?,
                    None => Vec::new(),
                },
                self.stmts(&s.body, depth + 1)?,
            ),
            mj::Stmt::FilterBlock(f) => {
                let chain = self.filter_chain(&f.filter)?;
                let body = self.stmts(&f.body, depth + 1)?;
                match &chain[..] {
                    [(name, args)] if name == GENERATION_FILTER && args.is_empty() => {
                        Stmt::Generation(body)
                    }
                    _ if chain.iter().any(|(n, _)| n == GENERATION_FILTER) => {
                        return decline("a misplaced generation tag")
                    }
                    _ => Stmt::FilterBlock(chain, body),
                }
            }
            mj::Stmt::CallBlock(c) => {
                let decl = &c.macro_decl;
                let caller =
                    self.macro_def("caller", &decl.args, &decl.defaults, &decl.body, depth)?;
                Stmt::CallBlock(Box::new(CallBlock {
                    callee: self.expr(&c.call.expr)?,
                    args: self.args(&c.call.args)?,
                    caller,
                }))
            }
            mj::Stmt::Macro(m) => {
                if depth > 0 {
                    return decline("a macro defined inside a block");
                }
                Stmt::Macro(self.macro_def(m.name, &m.args, &m.defaults, &m.body, depth)?)
            }
            mj::Stmt::Continue(_) => Stmt::Continue,
            mj::Stmt::Break(_) => Stmt::Break,
            _ => return decline("a statement this engine does not run"),
        })
    }

    /// A macro (or a call block's `caller`): `varargs` and `kwargs` decline where they
    /// are read; `caller` is an implicit parameter when the body reads it.
    fn macro_def(
        &self,
        name: &str,
        args: &[mj::Expr<'_>],
        defaults: &[mj::Expr<'_>],
        body: &[mj::Stmt<'_>],
        depth: usize,
    ) -> Res<Arc<MacroDef>> {
        let mut params = Vec::new();
        for arg in args {
            match arg {
                mj::Expr::Var(v) => params.push(v.id.to_string()),
                _ => return decline("a macro parameter that is not a name"),
            }
        }
        let body = self.stmts(body, depth + 1)?;
        let defaults: Vec<Expr> = defaults.iter().map(|e| self.expr(e)).collect::<Res<_>>()?;
        // (Jinja's `find_undeclared` looks at the body only, not the defaults.)
        let reads_caller = reads_name(&body, "caller");
        let explicit = params.iter().position(|p| p == "caller");
        if reads_caller {
            if let Some(i) = explicit {
                // Jinja refuses a read `caller` parameter without a default.
                if i < params.len() - defaults.len() {
                    return decline("a caller parameter without a default");
                }
            }
        }
        Ok(Arc::new(MacroDef {
            name: name.to_string(),
            implicit_caller: reads_caller && explicit.is_none(),
            params,
            defaults,
            body,
        }))
    }

    /// A filter chain (`f(a)|g`, innermost first) in the order the filters apply.
    fn filter_chain(&self, chain: &mj::Expr<'_>) -> Res<Vec<FilterCall>> {
        let mut out = Vec::new();
        let mut at = chain;
        loop {
            match at {
                mj::Expr::Filter(f) => {
                    out.push((f.name.to_string(), self.args(&f.args)?));
                    match &f.expr {
                        Some(inner) => at = inner,
                        None => break,
                    }
                }
                _ => return decline("a filter chain"),
            }
        }
        out.reverse();
        Ok(out)
    }

    fn target(&self, e: &mj::Expr<'_>) -> Res<Target> {
        Ok(match e {
            mj::Expr::Var(v) => Target::Name(v.id.to_string()),
            mj::Expr::GetAttr(a) => match &a.expr {
                mj::Expr::Var(v) => Target::Attr(v.id.to_string(), a.name.to_string()),
                _ => return decline("an assignment target"),
            },
            mj::Expr::Tuple(_) | mj::Expr::List(_) => {
                let items = match e {
                    mj::Expr::Tuple(t) => &t.items,
                    mj::Expr::List(l) => &l.items,
                    _ => unreachable!(),
                };
                let mut names = Vec::new();
                for item in items {
                    match item {
                        mj::Expr::Var(v) => names.push(v.id.to_string()),
                        _ => return decline("a nested unpacking target"),
                    }
                }
                Target::Tuple(names)
            }
            _ => return decline("an assignment target"),
        })
    }

    fn args(&self, args: &[mj::CallArg<'_>]) -> Res<Vec<Arg>> {
        args.iter()
            .map(|a| match a {
                mj::CallArg::Pos(e) => Ok(Arg::Pos(self.expr(e)?)),
                mj::CallArg::Kwarg(name, e) => Ok(Arg::Kw(name.to_string(), self.expr(e)?)),
                _ => decline("a splatted argument"),
            })
            .collect()
    }

    fn boxed(&self, e: &mj::Expr<'_>) -> Res<Box<Expr>> {
        Ok(Box::new(self.expr(e)?))
    }

    fn opt(&self, e: &Option<mj::Expr<'_>>) -> Res<Option<Expr>> {
        e.as_ref().map(|e| self.expr(e)).transpose()
    }

    fn expr(&self, e: &mj::Expr<'_>) -> Res<Expr> {
        Ok(match e {
            mj::Expr::Var(v) => Expr::Var(v.id.to_string()),
            mj::Expr::Const(c) => Expr::Const(self.constant(&c.value, c.span())?),
            mj::Expr::Slice(s) => Expr::Slice(Box::new([
                Some(self.expr(&s.expr)?),
                self.opt(&s.start)?,
                self.opt(&s.stop)?,
                self.opt(&s.step)?,
            ])),
            mj::Expr::UnaryOp(u) => match u.op {
                mj::UnaryOpKind::Not => Expr::Not(self.boxed(&u.expr)?),
                mj::UnaryOpKind::Neg => Expr::Neg(self.boxed(&u.expr)?),
            },
            mj::Expr::BinOp(b) => {
                let (l, r) = (self.boxed(&b.left)?, self.boxed(&b.right)?);
                let cmp = |op| Expr::Compare(l, vec![(op, *r)]);
                let bin = |op| Ok(Expr::Bin(op, self.boxed(&b.left)?, self.boxed(&b.right)?));
                match b.op {
                    mj::BinOpKind::Eq => cmp(CmpOp::Eq),
                    mj::BinOpKind::Ne => cmp(CmpOp::Ne),
                    mj::BinOpKind::Lt => cmp(CmpOp::Lt),
                    mj::BinOpKind::Lte => cmp(CmpOp::Lte),
                    mj::BinOpKind::Gt => cmp(CmpOp::Gt),
                    mj::BinOpKind::Gte => cmp(CmpOp::Gte),
                    mj::BinOpKind::In => cmp(CmpOp::In),
                    mj::BinOpKind::ScAnd => bin(BinOp::And)?,
                    mj::BinOpKind::ScOr => bin(BinOp::Or)?,
                    mj::BinOpKind::Add => bin(BinOp::Add)?,
                    mj::BinOpKind::Sub => bin(BinOp::Sub)?,
                    mj::BinOpKind::Mul => bin(BinOp::Mul)?,
                    mj::BinOpKind::Div => bin(BinOp::Div)?,
                    mj::BinOpKind::FloorDiv => bin(BinOp::FloorDiv)?,
                    mj::BinOpKind::Rem => bin(BinOp::Rem)?,
                    mj::BinOpKind::Pow => bin(BinOp::Pow)?,
                    mj::BinOpKind::Concat => bin(BinOp::Concat)?,
                }
            }
            mj::Expr::Compare(c) => {
                let mut ops = Vec::new();
                for op in &c.ops {
                    let kind = match op.op {
                        mj::CompareOpKind::Eq => CmpOp::Eq,
                        mj::CompareOpKind::Ne => CmpOp::Ne,
                        mj::CompareOpKind::Lt => CmpOp::Lt,
                        mj::CompareOpKind::Lte => CmpOp::Lte,
                        mj::CompareOpKind::Gt => CmpOp::Gt,
                        mj::CompareOpKind::Gte => CmpOp::Gte,
                        mj::CompareOpKind::In => CmpOp::In,
                        mj::CompareOpKind::NotIn => CmpOp::NotIn,
                    };
                    ops.push((kind, self.expr(&op.expr)?));
                }
                Expr::Compare(self.boxed(&c.expr)?, ops)
            }
            mj::Expr::IfExpr(i) => Expr::IfExpr(
                self.boxed(&i.test_expr)?,
                self.boxed(&i.true_expr)?,
                i.false_expr.as_ref().map(|e| self.boxed(e)).transpose()?,
            ),
            mj::Expr::Filter(f) => match &f.expr {
                Some(inner) => {
                    Expr::Filter(f.name.to_string(), self.boxed(inner)?, self.args(&f.args)?)
                }
                None => return decline("a filter block"),
            },
            mj::Expr::Test(t) => Expr::Test(
                t.name.to_string(),
                self.boxed(&t.expr)?,
                self.args(&t.args)?,
            ),
            mj::Expr::GetAttr(a) => Expr::Attr(self.boxed(&a.expr)?, a.name.to_string()),
            mj::Expr::GetItem(g) => {
                Expr::Item(self.boxed(&g.expr)?, self.boxed(&g.subscript_expr)?)
            }
            mj::Expr::Call(c) => Expr::Call(self.boxed(&c.expr)?, self.args(&c.args)?),
            mj::Expr::List(l) => {
                Expr::List(l.items.iter().map(|e| self.expr(e)).collect::<Res<_>>()?)
            }
            mj::Expr::Tuple(t) => {
                Expr::Tuple(t.items.iter().map(|e| self.expr(e)).collect::<Res<_>>()?)
            }
            mj::Expr::Map(m) => {
                let mut pairs = Vec::new();
                for (k, v) in m.keys.iter().zip(m.values.iter()) {
                    pairs.push((self.expr(k)?, self.expr(v)?));
                }
                Expr::Map(pairs)
            }
        })
    }

    /// A literal, read back from its source text: numbers from minijinja's value (after
    /// checking the text says int or float), strings with Python's escapes.
    fn constant(&self, value: &minijinja::Value, span: minijinja::machinery::Span) -> Res<Value> {
        let raw = self
            .source
            .get(span.start_offset as usize..span.end_offset as usize)
            .unwrap_or("");
        let kind = value.kind();
        use minijinja::value::ValueKind;
        Ok(match kind {
            ValueKind::None => Value::None,
            ValueKind::Bool => Value::Bool(value.is_true()),
            ValueKind::Number => {
                let text = raw.trim();
                let radix = ["0x", "0X", "0o", "0O", "0b", "0B"]
                    .iter()
                    .any(|p| text.starts_with(p));
                let is_float = !radix && text.contains(['.', 'e', 'E']);
                if is_float {
                    Value::Float(
                        f64::try_from(value.clone())
                            .map_err(|_| super::value::Decline("a float literal".into()))?,
                    )
                } else {
                    match value.as_i64() {
                        Some(i) => Value::Int(i),
                        None => return decline("an integer literal beyond 64 bits"),
                    }
                }
            }
            ValueKind::String => {
                let text = python_string_literals(raw)?;
                if Some(text.as_str()) != value.as_str() && !raw.contains('\\') {
                    return decline("a string literal read differently");
                }
                Value::str(text)
            }
            _ => return decline("a literal of an unexpected kind"),
        })
    }
}

/// The value of one or more adjacent Python string literals (`'a' "b"`), as Jinja's lexer
/// reads them (Python's `unicode-escape` rules).
fn python_string_literals(raw: &str) -> Res<String> {
    let mut out = String::new();
    let mut chars = raw.trim().chars().peekable();
    let mut seen = false;
    while let Some(quote) = chars.next() {
        if quote.is_whitespace() {
            continue;
        }
        if quote != '\'' && quote != '"' {
            return decline("string literal text");
        }
        seen = true;
        loop {
            let c = chars
                .next()
                .ok_or_else(|| super::value::Decline("string end".into()))?;
            if c == quote {
                break;
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let e = chars
                .next()
                .ok_or_else(|| super::value::Decline("string end".into()))?;
            match e {
                '\n' => {}
                '\\' => out.push('\\'),
                '\'' => out.push('\''),
                '"' => out.push('"'),
                'a' => out.push('\u{7}'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'v' => out.push('\u{b}'),
                'x' | 'u' | 'U' => {
                    let n = match e {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex: String = (0..n).filter_map(|_| chars.next()).collect();
                    let code = u32::from_str_radix(&hex, 16)
                        .ok()
                        .filter(|_| hex.len() == n)
                        .and_then(char::from_u32)
                        .ok_or_else(|| super::value::Decline("a bad escape".into()))?;
                    out.push(code);
                }
                '0'..='7' => return decline("an octal escape"),
                'N' => return decline("a named escape"),
                // Jinja escapes non-ASCII text (`backslashreplace`) before decoding, so a
                // backslash before such a character escapes that escape's backslash.
                other if !other.is_ascii() => return decline("a backslash before non-ASCII"),
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }
    if !seen {
        return decline("an empty string literal source");
    }
    Ok(out)
}
