import CLinux
import Dispatch

/// Hands the heap memory freed after a burst back to the kernel every `seconds` (0: never), and
/// returns the timer to keep alive. glibc's allocator keeps what a worker thread frees in that
/// thread's arena and returns little of it by itself, so without this an idle server would stay
/// at the size of its busiest moment (issue 15: RSS). `malloc_trim(0)` releases the free pages of
/// every arena; it takes each arena's lock briefly, well under a millisecond here.
func startMemoryTrimming(every seconds: Int) -> (any DispatchSourceTimer)? {
    guard seconds > 0 else { return nil }
    let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "locify.memory-trim", qos: .utility))
    timer.schedule(deadline: .now() + .seconds(seconds), repeating: .seconds(seconds), leeway: .milliseconds(250))
    timer.setEventHandler { _ = locify_malloc_trim() }
    timer.resume()
    return timer
}
