package queue

import "container/heap"

// podHeap is a heap of queued pods with removal by key.
type podHeap struct {
	items []*QueuedPodInfo
	index map[string]int
	less  func(a, b *QueuedPodInfo) bool
}

func newHeap(less func(a, b *QueuedPodInfo) bool) *podHeap {
	return &podHeap{index: map[string]int{}, less: less}
}

func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.items[i].key] = i
	h.index[h.items[j].key] = j
}
func (h *podHeap) Push(x any) {
	q := x.(*QueuedPodInfo)
	h.index[q.key] = len(h.items)
	h.items = append(h.items, q)
}
func (h *podHeap) Pop() any {
	q := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	delete(h.index, q.key)
	return q
}

func (h *podHeap) add(q *QueuedPodInfo) {
	if i, ok := h.index[q.key]; ok {
		h.items[i] = q
		heap.Fix(h, i)
		return
	}
	heap.Push(h, q)
}

func (h *podHeap) get(key string) *QueuedPodInfo {
	if i, ok := h.index[key]; ok {
		return h.items[i]
	}
	return nil
}

func (h *podHeap) remove(key string) *QueuedPodInfo {
	i, ok := h.index[key]
	if !ok {
		return nil
	}
	return heap.Remove(h, i).(*QueuedPodInfo)
}

func (h *podHeap) peek() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *podHeap) pop() *QueuedPodInfo { return heap.Pop(h).(*QueuedPodInfo) }
