/* write_each in C: a big fan-out's notify appends with the GIL released once for all of them.
 *
 * agorad/runtime/helper.py holds the plain Python version and says when this one is used. The two
 * return the same list for the same pairs (tests/test_appends.py holds them to each other):
 * for each (fd, line), in order, the bytes write(2) wrote, or the OSError it raised.
 *
 * Why: each os.write releases and retakes the GIL, so the helper thread's half and the loop
 * thread's half of a 1,000-member fan-out took turns at it; here each half runs whole with the GIL
 * released, on its own core. Measured in bench/README.md ("Fan-out: the appends in C").
 *
 * As os.write, a write interrupted by a signal is made again (PEP 475); the signal's Python
 * handler runs once the GIL is taken back (the hub's handlers only set flags). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#define USAGE "write_each takes a list of (file descriptor, bytes) pairs"

typedef struct {
    int fd;
    PyObject *line;  /* held for the write: the caller's list could change while the GIL is released */
    ssize_t done;
    int error;
} Append;

static void release(Append *todo, Py_ssize_t held) {
    for (Py_ssize_t i = 0; i < held; i++)
        Py_DECREF(todo[i].line);
    PyMem_Free(todo);
}

/* Fill todo[i] from pairs[i]; 0, or -1 with an exception set. */
static int take(Append *item, PyObject *pair) {
    PyObject *line;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyBytes_Check(line = PyTuple_GET_ITEM(pair, 1))) {
        PyErr_SetString(PyExc_TypeError, USAGE);
        return -1;
    }
    PyObject *number = PyTuple_GET_ITEM(pair, 0);
    if (!PyLong_Check(number)) {  /* an int, not anything with __index__: no Python code runs in here */
        PyErr_SetString(PyExc_TypeError, USAGE);
        return -1;
    }
    long fd = PyLong_AsLong(number);
    if (fd == -1 && PyErr_Occurred())
        return -1;
    if (fd < INT_MIN || fd > INT_MAX) {  /* as os.write: a negative one is write(2)'s EBADF, a huge one this */
        PyErr_Format(PyExc_OverflowError, "a file descriptor out of range: %ld", fd);
        return -1;
    }
    item->fd = (int)fd;
    Py_INCREF(line);
    item->line = line;
    return 0;
}

static void write_all(Append *todo, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Append *item = &todo[i];
        do
            item->done = write(item->fd, PyBytes_AS_STRING(item->line), (size_t)PyBytes_GET_SIZE(item->line));
        while (item->done < 0 && errno == EINTR);
        item->error = item->done < 0 ? errno : 0;
    }
}

/* OSError(errno, strerror) is what os.write raises: the constructor picks the subclass by errno. The message
 * is decoded as PyErr_SetFromErrno decodes it, from the locale with surrogateescape: after setlocale(LC_ALL)
 * in a locale whose encoding is not UTF-8 it can be any bytes, and failing to decode it here would lose the
 * results of writes already made. */
static PyObject *os_error(int error) {
    PyObject *message = PyUnicode_DecodeLocale(strerror(error), "surrogateescape");
    if (message == NULL)
        return NULL;
    PyObject *exc = PyObject_CallFunction(PyExc_OSError, "iO", error, message);
    Py_DECREF(message);
    return exc;
}

static PyObject *results_of(Append *todo, Py_ssize_t n) {
    PyObject *results = PyList_New(n);
    if (results == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = todo[i].error ? os_error(todo[i].error) : PyLong_FromSsize_t(todo[i].done);
        if (item == NULL) {
            Py_DECREF(results);
            return NULL;
        }
        PyList_SET_ITEM(results, i, item);
    }
    return results;
}

static PyObject *write_each(PyObject *module, PyObject *pairs) {
    (void)module;
    if (!PyList_Check(pairs)) {
        PyErr_SetString(PyExc_TypeError, USAGE);
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(pairs), held = 0;
    Append *todo = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Append));
    if (todo == NULL)
        return PyErr_NoMemory();
    for (; held < n; held++) {
        if (take(&todo[held], PyList_GET_ITEM(pairs, held)) < 0) {
            release(todo, held);
            return NULL;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    write_all(todo, n);
    Py_END_ALLOW_THREADS
    PyObject *results = results_of(todo, n);
    release(todo, held);
    return results;
}

static PyMethodDef methods[] = {
    {"write_each", write_each, METH_O,
     "write_each(pairs) -> list: os.write(fd, line) for each (fd, line) pair, in order, with the GIL released;\n"
     "the bytes each wrote, or the OSError it raised."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "agorad.runtime._appends", "A big fan-out's notify appends in C (helper.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__appends(void) {
    return PyModule_Create(&module);
}
