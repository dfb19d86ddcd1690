// nothreads.h: single-threaded stand-ins for std::mutex and its friends,
// force-included (-include) into every file of the checker module.
//
// Debian's wasm32 libc++ is built without threads, so <mutex> and
// <condition_variable> declare none of these; Luau's Frontend names them
// for its multi-threaded mode, which the checker never uses (one instance,
// one thread). Locking is a no-op; a condition_variable wait whose
// predicate is false could never be woken in one thread, so it traps (the
// host reports the check as unchecked) instead of spinning.
#pragma once

#include <__config>
#include <condition_variable>
#include <mutex>

#if defined(_LIBCPP_HAS_NO_THREADS) || (defined(_LIBCPP_HAS_THREADS) && !_LIBCPP_HAS_THREADS)
namespace std
{

class mutex
{
public:
    constexpr mutex() noexcept = default;
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;
    void lock() {}
    bool try_lock() { return true; }
    void unlock() {}
};

template<class Mutex>
class unique_lock
{
public:
    explicit unique_lock(Mutex& m)
        : m_(&m)
    {
        m_->lock();
    }
    ~unique_lock()
    {
        m_->unlock();
    }
    unique_lock(const unique_lock&) = delete;
    unique_lock& operator=(const unique_lock&) = delete;

private:
    Mutex* m_;
};

template<class... Mutexes>
class scoped_lock
{
public:
    explicit scoped_lock(Mutexes&...) {}
    scoped_lock(const scoped_lock&) = delete;
    scoped_lock& operator=(const scoped_lock&) = delete;
};

class condition_variable
{
public:
    template<class Predicate>
    void wait(unique_lock<mutex>&, Predicate ready)
    {
        if (!ready())
            __builtin_trap();
    }
    void notify_one() noexcept {}
    void notify_all() noexcept {}
};

} // namespace std
#endif
