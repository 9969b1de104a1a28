// runner.h: how the emulator runs one launch, shared by the harness
// (harness.cpp.in) and the fake CUDA driver (engine/cudaexec/fakecuda):
// the blocks one after another, each with one OS thread per CUDA thread
// (a pool that grows to the largest block seen and lives as long as the
// process), __syncthreads a std::barrier over the block's threads. One
// launch runs at a time: the caller serialises them.
#pragma once
#include "shim.h"
#include <condition_variable>
#include <csignal>
#include <pthread.h>
#include <cstdint>
#include <mutex>
#include <thread>

// emu_job is one launch: call(args) is the kernel with its arguments,
// run once per CUDA thread of every block.
struct emu_job {
    void (*call)(const void* args);
    const void* args;
    unsigned g[3], b[3];
    uint64_t nt;
};

// The pool's lock and conditions are made once and never destroyed: the
// detached workers wait on emu_pool_start for ever, and glibc's
// pthread_cond_destroy waits for its waiters, so a static condition's
// destructor at exit() (the harness returning from main, a race-enabled Go
// test binary loading the fake driver) would never return.
static std::mutex& emu_pool_mu = *new std::mutex;
static std::condition_variable& emu_pool_start = *new std::condition_variable;
static std::condition_variable& emu_pool_done = *new std::condition_variable;
static uint64_t emu_pool_gen;
static uint64_t emu_pool_left;
static emu_job emu_pool_job;
static uint64_t emu_pool_size;

static void emu_run_thread(uint64_t t, const emu_job& j) {
    threadIdx = {(unsigned)(t % j.b[0]), (unsigned)(t / j.b[0] % j.b[1]), (unsigned)(t / j.b[0] / j.b[1])};
    for (unsigned z = 0; z < j.g[2]; z++)
        for (unsigned y = 0; y < j.g[1]; y++)
            for (unsigned x = 0; x < j.g[0]; x++) {
                blockIdx = {x, y, z};
                j.call(j.args);
                emu_block_barrier->arrive_and_wait();  // the block ends before the next begins
            }
}

static void emu_worker(uint64_t i) {
    // The workers take no signals: in a Go process (the fake driver) the
    // runtime's handlers expect its own threads.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    uint64_t seen = 0;
    for (;;) {
        emu_job j;
        {
            std::unique_lock<std::mutex> l(emu_pool_mu);
            emu_pool_start.wait(l, [&] { return emu_pool_gen != seen; });
            seen = emu_pool_gen;
            j = emu_pool_job;
        }
        if (i >= j.nt) continue;
        emu_run_thread(i, j);
        std::lock_guard<std::mutex> l(emu_pool_mu);
        if (--emu_pool_left == 0) emu_pool_done.notify_one();
    }
}

// emu_run_launch runs j (blockDim threads of 1..1024) and returns when
// every block is done. It sets gridDim, blockDim and the block barrier.
static void emu_run_launch(const emu_job& j) {
    gridDim = {j.g[0], j.g[1], j.g[2]};
    blockDim = {j.b[0], j.b[1], j.b[2]};
    std::barrier<> bar((std::ptrdiff_t)j.nt);
    emu_block_barrier = &bar;
    std::unique_lock<std::mutex> l(emu_pool_mu);
    for (; emu_pool_size < j.nt; emu_pool_size++) std::thread(emu_worker, emu_pool_size).detach();
    emu_pool_job = j;
    emu_pool_left = j.nt;
    emu_pool_gen++;
    emu_pool_start.notify_all();
    emu_pool_done.wait(l, [] { return emu_pool_left == 0; });
}
