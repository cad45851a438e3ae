/* golem_core._native._speedups: the JSON fast decoder, compiled (optional; ADR 0149).
 *
 * It does exactly what the fast decoder that ``_json_compiled`` writes in Python does,
 * read from the same field table (``_json_fields``), which ``_json_compiled`` hands it
 * as a spec: for each record (a message, a usage, each part type) its class, its tag,
 * its known keys, its keys that refuse null, and per field the JSON key, the attribute,
 * the kind, whether it is required, its default, whether equal strings are shared, and
 * whether null reads as absent. ``decoder(spec)`` returns a ``Decoder`` whose
 * ``messages(list, names)`` and ``message(dict, names)`` build the frozen values by
 * setting their slots directly (no ``__init__``, no ``__setattr__``: the classes have
 * no converters or validators, so this equals the constructor), and raise the spec's
 * ``Unhandled`` at the first thing they do not handle; the caller then runs the
 * reference decoder, which reports the error or builds the very same value. What is
 * rare stays in Python, called from here: unknown fields (``_leftovers``), unknown part
 * types (``_unknown_part``), timestamps and base64 (the stdlib's own parsers).
 *
 * Without a C compiler the package installs without this module and the Python fast
 * decoder runs; properties/test_codec_agreement_properties.py holds both to the
 * reference decoder on every input. Over 600 lines because it is one concept: the
 * decoder, the spec it reads and the untracking of what it builds are read together.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#ifndef GOLEM_SOURCE_SHA256 /* hatch_build.py defines it: this file's SHA-256 */
#define GOLEM_SOURCE_SHA256 ""
#endif

enum {
    K_ROLE = 1,
    K_PARTS,
    K_STR,
    K_OPTIONAL_STR,
    K_FLAG,
    K_TIMESTAMP,
    K_COUNT,
    K_USAGE,
    K_PART_KIND,
    K_BASE64,
};

#define MAX_FIELDS 32
#define MAX_PART_TYPES 16

typedef struct {
    PyObject *key;  /* borrowed from the spec */
    PyObject *dflt; /* borrowed; NULL when required */
    int kind;
    int shared;
    int nullable;
    Py_ssize_t offset;
} Field;

typedef struct {
    PyTypeObject *cls; /* borrowed from the spec */
    PyObject *tag;     /* borrowed; NULL for a message or a usage */
    PyObject *known;
    PyObject *not_null;
    Py_ssize_t nfields;
    Field fields[MAX_FIELDS];
    Py_ssize_t extra_offset;
} Record;

typedef struct {
    PyObject_HEAD
    PyObject *spec; /* owns every object the records borrow */
    PyObject *unhandled, *roles, *part_kinds, *fromisoformat, *b64decode, *leftovers,
        *unknown_part, *type_key, *empty;
    Record message;
    Record usage;
    Py_ssize_t nparts;
    Record parts[MAX_PART_TYPES];
} Decoder;

/* -- building ------------------------------------------------------------------------ */

static PyObject *
unhandled(Decoder *self)
{
    PyErr_SetNone(self->unhandled);
    return NULL;
}

static PyObject *build(Decoder *self, Record *r, PyObject *d, PyObject *names);
static int acyclic(PyObject *v, int depth);

static PyObject *
part(Decoder *self, PyObject *pd, PyObject *names)
{
    if (!PyDict_CheckExact(pd)) {
        return unhandled(self);
    }
    PyObject *tag = PyDict_GetItemWithError(pd, self->type_key);
    if (tag == NULL && PyErr_Occurred()) {
        return NULL;
    }
    if (tag != NULL && PyUnicode_CheckExact(tag)) {
        for (Py_ssize_t k = 0; k < self->nparts; k++) {
            if (PyUnicode_Compare(tag, self->parts[k].tag) == 0) {
                return build(self, &self->parts[k], pd, names);
            }
        }
    }
    return PyObject_CallFunctionObjArgs(self->unknown_part, pd, names, NULL);
}

typedef PyObject *(*Reader)(Decoder *, PyObject *, PyObject *);

/* ``read`` of each item of the list ``v``, into a new tuple (``tuple``) or list. */
static PyObject *
each(Decoder *self, PyObject *v, PyObject *names, Reader read, int tuple)
{
    if (!PyList_CheckExact(v)) {
        return unhandled(self);
    }
    Py_ssize_t n = PyList_GET_SIZE(v);
    PyObject *out = tuple ? PyTuple_New(n) : PyList_New(n);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i >= PyList_GET_SIZE(v)) { /* only Python callbacks could shrink it */
            Py_DECREF(out);
            return unhandled(self);
        }
        PyObject *item = PyList_GET_ITEM(v, i);
        Py_INCREF(item);
        PyObject *x = read(self, item, names);
        Py_DECREF(item);
        if (x == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        if (tuple) {
            PyTuple_SET_ITEM(out, i, x);
        }
        else {
            PyList_SET_ITEM(out, i, x);
        }
    }
    return out;
}

static PyObject *
parts(Decoder *self, PyObject *v, PyObject *names)
{
    PyObject *out = each(self, v, names, part, 1);
    if (out != NULL && acyclic(out, 1)) { /* every part untracked (untrack_if_acyclic) */
        PyObject_GC_UnTrack(out);
    }
    return out;
}

static PyObject *
message(Decoder *self, PyObject *d, PyObject *names)
{
    if (!PyDict_CheckExact(d)) {
        return unhandled(self);
    }
    return build(self, &self->message, d, names);
}

/* A value read by the stdlib parser ``fn`` (a timestamp, base64), or ``Unhandled``
 * where it raises ``ValueError`` (as the Python fast decoder does). */
static PyObject *
parsed(Decoder *self, PyObject *fn, PyObject *v)
{
    if (!PyUnicode_CheckExact(v)) {
        return unhandled(self);
    }
    PyObject *out = PyObject_CallOneArg(fn, v);
    if (out == NULL && PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear();
        return unhandled(self);
    }
    return out;
}

/* The value of field ``f`` from ``v`` (present, not null): a new reference. */
static PyObject *
convert(Decoder *self, Field *f, PyObject *v, PyObject *names)
{
    switch (f->kind) {
    case K_ROLE: {
        if (!PyUnicode_CheckExact(v)) {
            return unhandled(self);
        }
        PyObject *role = PyDict_GetItemWithError(self->roles, v);
        if (role == NULL) {
            return PyErr_Occurred() ? NULL : unhandled(self);
        }
        return Py_NewRef(role);
    }
    case K_PARTS:
        return parts(self, v, names);
    case K_STR:
    case K_OPTIONAL_STR:
        if (!PyUnicode_CheckExact(v)) {
            return unhandled(self);
        }
        if (f->shared) { /* the first equal string of this decode */
            PyObject *first = PyDict_SetDefault(names, v, v);
            return first == NULL ? NULL : Py_NewRef(first);
        }
        return Py_NewRef(v);
    case K_FLAG:
        if (!PyBool_Check(v)) {
            return unhandled(self);
        }
        return Py_NewRef(v);
    case K_TIMESTAMP:
        return parsed(self, self->fromisoformat, v);
    case K_COUNT: {
        if (!PyLong_CheckExact(v)) {
            return unhandled(self);
        }
        int overflow = 0;
        long long count = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (count == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (overflow < 0 || (overflow == 0 && count < 0)) {
            return unhandled(self);
        }
        return Py_NewRef(v);
    }
    case K_USAGE:
        if (!PyDict_CheckExact(v)) {
            return unhandled(self);
        }
        return build(self, &self->usage, v, names);
    case K_PART_KIND: {
        if (!PyUnicode_CheckExact(v)) {
            return unhandled(self);
        }
        int known = PySet_Contains(self->part_kinds, v);
        if (known < 0) {
            return NULL;
        }
        return known ? Py_NewRef(v) : unhandled(self);
    }
    case K_BASE64:
        return parsed(self, self->b64decode, v);
    }
    PyErr_Format(PyExc_SystemError, "golem_core._native._speedups: unknown kind %d", f->kind);
    return NULL;
}

/* Whether the cyclic collector can skip ``v`` (it holds nothing that could lead back to
 * it): an atomic value (str, int, bool, None, bytes, float, a datetime), a value this
 * module built and untracked, or, to ``depth`` levels, a tuple of such values. */
static int
acyclic(PyObject *v, int depth)
{
    if (!PyObject_IS_GC(v) || !PyObject_GC_IsTracked(v)) {
        return 1;
    }
    if (depth == 0 || !PyTuple_CheckExact(v)) {
        return 0;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(v); k++) {
        if (!acyclic(PyTuple_GET_ITEM(v, k), depth - 1)) {
            return 0;
        }
    }
    return 1;
}

/* A value built here is made of immutable leaves (strings, numbers, ``None``, a ``Role``,
 * a ``datetime``, bytes, a usage, tuples of parts and of unknown fields' key and text), so
 * it can never be part of a reference cycle. Left tracked, the cyclic collector would
 * traverse each of the many objects a long history decodes to, at each generation it is
 * promoted to, to find nothing: about a third of a decode's time, paid at the next
 * collections after it. So each value whose fields are all acyclic is untracked, as
 * CPython untracks its own tuples and dicts of atomic values (``_PyTuple_MaybeUntrack``).
 * A ``Role`` is an enum member (a tracked object that refers to no value of ours). A
 * value holding anything else (an ``UnknownPart``, built in Python) stays tracked. */
static void
untrack_if_acyclic(PyObject *o, Record *r)
{
    char *base = (char *)o;
    for (Py_ssize_t j = 0; j < r->nfields; j++) {
        if (r->fields[j].kind != K_ROLE
            && !acyclic(*(PyObject **)(base + r->fields[j].offset), 1)) {
            return;
        }
    }
    if (!acyclic(*(PyObject **)(base + r->extra_offset), 2)) { /* ((key, text), ...) */
        return;
    }
    PyObject_GC_UnTrack(o);
}

/* An instance of ``r``'s class from the dict ``d``. */
static PyObject *
build(Decoder *self, Record *r, PyObject *d, PyObject *names)
{
    PyObject *values[MAX_FIELDS];
    Py_ssize_t n = PyDict_GET_SIZE(d);
    Py_ssize_t seen = r->tag != NULL; /* the ``type`` key of a part */
    Py_ssize_t i = 0;
    for (; i < r->nfields; i++) {
        Field *f = &r->fields[i];
        PyObject *v = PyDict_GetItemWithError(d, f->key);
        if (v == NULL && PyErr_Occurred()) {
            goto fail;
        }
        if (v == NULL || v == Py_None) {
            if (f->dflt == NULL || (v == Py_None && !f->nullable)) {
                unhandled(self);
                goto fail;
            }
            values[i] = Py_NewRef(f->dflt);
            continue;
        }
        seen++;
        values[i] = convert(self, f, v, names);
        if (values[i] == NULL) {
            goto fail;
        }
    }
    PyObject *extra;
    if (seen == n) {
        extra = Py_NewRef(self->empty);
    }
    else {
        extra = PyObject_CallFunctionObjArgs(self->leftovers, d, r->known, r->not_null,
                                             names, NULL);
        if (extra == NULL) {
            goto fail;
        }
    }
    PyObject *o = r->cls->tp_alloc(r->cls, 0);
    if (o == NULL) {
        Py_DECREF(extra);
        goto fail;
    }
    char *base = (char *)o;
    for (Py_ssize_t j = 0; j < r->nfields; j++) { /* the object takes the references */
        *(PyObject **)(base + r->fields[j].offset) = values[j];
    }
    *(PyObject **)(base + r->extra_offset) = extra;
    untrack_if_acyclic(o, r);
    return o;
fail:
    for (Py_ssize_t j = 0; j < i; j++) {
        Py_DECREF(values[j]);
    }
    return NULL;
}

static PyObject *
decoder_messages(Decoder *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "messages(raw, names): names must be a dict");
        return NULL;
    }
    return each(self, args[0], args[1], message, 0);
}

static PyObject *
decoder_message(Decoder *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "message(d, names): names must be a dict");
        return NULL;
    }
    return message(self, args[0], args[1]);
}

/* -- reading the spec ------------------------------------------------------------------ */

/* The offset of the writable object slot ``name`` of ``cls`` (on it or a base). */
static Py_ssize_t
slot_offset(PyTypeObject *cls, PyObject *name)
{
    PyObject *descr = PyObject_GetAttr((PyObject *)cls, name);
    PyMemberDef *def = NULL;
    if (descr == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
    }
    else {
        if (Py_TYPE(descr) == &PyMemberDescr_Type
            && PyType_IsSubtype(cls, PyDescr_TYPE(descr))) {
            def = ((PyMemberDescrObject *)descr)->d_member;
        }
        Py_DECREF(descr); /* the class keeps it */
    }
    if (def == NULL || def->type != T_OBJECT_EX || (def->flags & READONLY)) {
        PyErr_Format(PyExc_TypeError, "decoder: %R is not a writable slot of %s", name,
                     cls->tp_name);
        return -1;
    }
    return def->offset;
}

static int
spec_error(const char *what)
{
    PyErr_Format(PyExc_TypeError, "decoder: bad spec (%s)", what);
    return -1;
}

/* ``rec``: (cls, tag or None, known, not_null, fields); a field:
 * (key, attr, kind, required, default, shared, nullable). */
static int
read_record(Record *r, PyObject *rec, int tagged)
{
    if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) != 5) {
        return spec_error("a record is a 5-tuple");
    }
    PyObject *cls = PyTuple_GET_ITEM(rec, 0), *tag = PyTuple_GET_ITEM(rec, 1);
    PyObject *fields = PyTuple_GET_ITEM(rec, 4);
    if (!PyType_Check(cls)) {
        return spec_error("a record's class");
    }
    r->cls = (PyTypeObject *)cls;
    if (r->cls->tp_itemsize != 0 || r->cls->tp_dictoffset != 0) {
        return spec_error("a record's class must be slotted");
    }
    if (tagged != (tag != Py_None) || (tagged && !PyUnicode_CheckExact(tag))) {
        return spec_error("a record's tag");
    }
    r->tag = tagged ? tag : NULL;
    r->known = PyTuple_GET_ITEM(rec, 2);
    r->not_null = PyTuple_GET_ITEM(rec, 3);
    if (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) > MAX_FIELDS) {
        return spec_error("a record's fields");
    }
    r->nfields = PyTuple_GET_SIZE(fields);
    for (Py_ssize_t i = 0; i < r->nfields; i++) {
        PyObject *row = PyTuple_GET_ITEM(fields, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 7) {
            return spec_error("a field is a 7-tuple");
        }
        Field *f = &r->fields[i];
        f->key = PyTuple_GET_ITEM(row, 0);
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(row, 2));
        if (!PyUnicode_CheckExact(f->key) || kind < K_ROLE || kind > K_BASE64) {
            return PyErr_Occurred() ? -1 : spec_error("a field's key or kind");
        }
        f->kind = (int)kind;
        int required = PyObject_IsTrue(PyTuple_GET_ITEM(row, 3));
        f->shared = PyObject_IsTrue(PyTuple_GET_ITEM(row, 5));
        f->nullable = PyObject_IsTrue(PyTuple_GET_ITEM(row, 6));
        if (required < 0 || f->shared < 0 || f->nullable < 0) {
            return -1;
        }
        f->dflt = required ? NULL : PyTuple_GET_ITEM(row, 4);
        f->offset = slot_offset(r->cls, PyTuple_GET_ITEM(row, 1));
        if (f->offset < 0) {
            return -1;
        }
    }
    PyObject *extra = PyUnicode_InternFromString("extra");
    if (extra == NULL) {
        return -1;
    }
    r->extra_offset = slot_offset(r->cls, extra);
    Py_DECREF(extra);
    return r->extra_offset < 0 ? -1 : 0;
}

static void
decoder_dealloc(Decoder *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->spec);
    PyObject_GC_Del(self);
}

static int
decoder_traverse(Decoder *self, visitproc visit, void *arg)
{
    Py_VISIT(self->spec);
    return 0;
}

static int
decoder_clear(Decoder *self)
{
    Py_CLEAR(self->spec);
    return 0;
}

static PyMethodDef decoder_methods[] = {
    {"messages", (PyCFunction)(void (*)(void))decoder_messages, METH_FASTCALL,
     "messages(raw, names): the messages of a list of JSON objects, or Unhandled."},
    {"message", (PyCFunction)(void (*)(void))decoder_message, METH_FASTCALL,
     "message(d, names): the message of a JSON object, or Unhandled."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "golem_core._native._speedups.Decoder",
    .tp_basicsize = sizeof(Decoder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)decoder_dealloc,
    .tp_traverse = (traverseproc)decoder_traverse,
    .tp_clear = (inquiry)decoder_clear,
    .tp_methods = decoder_methods,
    .tp_doc = "The compiled fast decoder of one field table (golem_core._native._speedups.decoder).",
};

/* spec: (helpers, message, usage, parts); helpers: (Unhandled, roles, part_kinds,
 * fromisoformat, b64decode, leftovers, unknown_part). */
static PyObject *
decoder(PyObject *module, PyObject *spec)
{
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 4) {
        spec_error("(helpers, message, usage, parts)");
        return NULL;
    }
    PyObject *helpers = PyTuple_GET_ITEM(spec, 0), *part_specs = PyTuple_GET_ITEM(spec, 3);
    if (!PyTuple_Check(helpers) || PyTuple_GET_SIZE(helpers) != 7) {
        spec_error("helpers is a 7-tuple");
        return NULL;
    }
    if (!PyTuple_Check(part_specs) || PyTuple_GET_SIZE(part_specs) > MAX_PART_TYPES) {
        spec_error("parts");
        return NULL;
    }
    Decoder *self = PyObject_GC_New(Decoder, &DecoderType);
    if (self == NULL) {
        return NULL;
    }
    self->spec = Py_NewRef(spec);
    self->unhandled = PyTuple_GET_ITEM(helpers, 0);
    self->roles = PyTuple_GET_ITEM(helpers, 1);
    self->part_kinds = PyTuple_GET_ITEM(helpers, 2);
    self->fromisoformat = PyTuple_GET_ITEM(helpers, 3);
    self->b64decode = PyTuple_GET_ITEM(helpers, 4);
    self->leftovers = PyTuple_GET_ITEM(helpers, 5);
    self->unknown_part = PyTuple_GET_ITEM(helpers, 6);
    self->type_key = NULL;
    self->empty = NULL;
    self->nparts = PyTuple_GET_SIZE(part_specs);
    PyObject_GC_Track(self);
    if (!PyExceptionClass_Check(self->unhandled) || !PyDict_CheckExact(self->roles)
        || !PyFrozenSet_CheckExact(self->part_kinds)) {
        spec_error("helpers");
        goto fail;
    }
    if (read_record(&self->message, PyTuple_GET_ITEM(spec, 1), 0) < 0
        || read_record(&self->usage, PyTuple_GET_ITEM(spec, 2), 0) < 0) {
        goto fail;
    }
    for (Py_ssize_t k = 0; k < self->nparts; k++) {
        if (read_record(&self->parts[k], PyTuple_GET_ITEM(part_specs, k), 1) < 0) {
            goto fail;
        }
    }
    /* both immortal in practice (an interned string, the empty tuple), kept by the
     * module's state below for the decoder's life */
    self->type_key = PyUnicode_InternFromString("type");
    self->empty = PyTuple_New(0);
    if (self->type_key == NULL || self->empty == NULL) {
        goto fail;
    }
    /* hand them to the spec's owner: a tuple of the spec and them */
    PyObject *owned = PyTuple_Pack(3, spec, self->type_key, self->empty);
    Py_DECREF(self->type_key);
    Py_DECREF(self->empty);
    if (owned == NULL) {
        self->type_key = self->empty = NULL;
        goto fail;
    }
    Py_SETREF(self->spec, owned);
    return (PyObject *)self;
fail:
    Py_XDECREF(self->type_key);
    Py_XDECREF(self->empty);
    Py_DECREF(self);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"decoder", (PyCFunction)decoder, METH_O,
     "decoder(spec): the compiled fast decoder of a field table's spec (built by "
     "golem_core.codec._json_compiled)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "golem_core._native._speedups",
    .m_doc = "The compiled fast decoder of golem_core's JSON codec (optional; ADR 0149).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (PyType_Ready(&DecoderType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    PyObject *all = Py_BuildValue("(sss)", "Decoder", "decoder", "source_sha256");
    if (PyModule_AddStringConstant(module, "source_sha256", GOLEM_SOURCE_SHA256) < 0
        || PyModule_AddObjectRef(module, "Decoder", (PyObject *)&DecoderType) < 0
        || all == NULL || PyModule_AddObjectRef(module, "__all__", all) < 0) {
        Py_XDECREF(all);
        Py_DECREF(module);
        return NULL;
    }
    Py_DECREF(all);
    return module;
}
