package controlplane

import "testing"

func TestHeadroomLimitGrowsWithTheLiveHeap(t *testing.T) {
	for _, c := range []struct{ asked, live, want int64 }{
		{300 << 20, 0, 300 << 20},
		{300 << 20, 150 << 20, 300 << 20},
		{300 << 20, 400 << 20, 800 << 20},
	} {
		if got := headroomLimit(c.asked, c.live); got != c.want {
			t.Errorf("headroomLimit(%d, %d) = %d, want %d", c.asked, c.live, got, c.want)
		}
	}
}
