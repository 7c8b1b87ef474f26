! Every kind of MPI call commscope counts, from Fortran through `use mpi_f08`, on
! exactly 2 ranks: the calls of tests/programs/fortran_mpi.f90 (its steps 1-17, same
! counts, sizes, tags and peers), with the f08 handle types (TYPE(MPI_Comm),
! TYPE(MPI_Request), TYPE(MPI_Status), ...), and these differences:
!
!   fortran_mpi_f08 DIR      (DIR: an existing directory for the MPI-IO file and the report)
!
!  0. MPI_Init_thread(MPI_THREAD_FUNNELED, provided) instead of MPI_Init.
!  *  The optional ierror argument is passed to MPI_Init_thread, the MPI_Send of
!     step 1, the MPI_Waitall of step 3, MPI_File_open and MPI_Finalize, and left
!     out of every other call (both forms of an f08 call).
!  *  Nonblocking and window buffers are ASYNCHRONOUS.
!
! r is the world rank, p = 1 - r.  INTEGER is 4 bytes and DOUBLE PRECISION 8.
!  1. Rank 0 MPI_Send's 10 INTEGER (40 B) to 1; rank 1 MPI_Recv's them with
!     MPI_STATUS_IGNORE.
!  2. Rank 1 MPI_Send's 20 DOUBLE PRECISION (160 B) to 0; rank 0 MPI_Recv's them
!     from MPI_ANY_SOURCE into a status (and checks its source and tag).
!  3. Each rank MPI_Irecv's 30 INTEGER (120 B) from p and MPI_Isend's 30 INTEGER to
!     p; one MPI_Waitall with MPI_STATUSES_IGNORE completes both.
!  4. The same with 40 INTEGER (160 B), completed by one MPI_Waitall into a statuses
!     array (checked).
!  5. The same with 5 INTEGER (20 B), completed by 2 x MPI_Waitany into a status
!     (checked: two different indices, both requests MPI_REQUEST_NULL after; an
!     index of 0 is let pass: MPICH 4.0's mpi_f08 returns them 0-based,
!     pmodels/mpich#6270).
!  6. Rank 0 MPI_Isend's 7 DOUBLE PRECISION (56 B) to 1, rank 1 MPI_Irecv's them;
!     each polls its request with MPI_Test (into a status) until done, and writes
!     how many MPI_Test calls that took to DIR/test_calls.<r> (one integer).
!  7. Persistent: rank 0 MPI_Send_init (8 INTEGER, 32 B, to 1), rank 1
!     MPI_Recv_init (8 INTEGER from 0); each does 3 x (MPI_Start, MPI_Wait; rank 0
!     with MPI_STATUS_IGNORE, rank 1 into a status), then MPI_Request_free of the
!     inactive request (nothing left to free).
!  8. Rank 0 MPI_Isend's 1 INTEGER (4 B) to 1 and MPI_Request_free's the active
!     request at once; rank 1 MPI_Recv's it with MPI_STATUS_IGNORE.
!  9. MPI_Bcast of 12 INTEGER (48 B) from rank 0.
! 10. MPI_Allreduce (MPI_SUM) of 6 DOUBLE PRECISION (48 B), separate buffers.
! 11. MPI_Allreduce (MPI_SUM) of 9 DOUBLE PRECISION (72 B) with MPI_IN_PLACE.
! 12. MPI_Allgather with MPI_IN_PLACE, 3 INTEGER (12 B) per rank (send count 0 and
!     MPI_DATATYPE_NULL, which MPI_IN_PLACE makes irrelevant).
! 13. MPI_Barrier.
! 14. MPI_Comm_split(MPI_COMM_WORLD, color 0, key p): world rank 1 is rank 0 of the
!     new communicator.  World rank 1 MPI_Send's 3 INTEGER (12 B) to its rank 1
!     (world 0), which MPI_Recv's from its rank 0 into a status.  MPI_Comm_free.
! 15. MPI_Win_create over 16 INTEGER (64 B) per rank, MPI_Win_fence; rank 0
!     MPI_Put's 4 INTEGER (16 B) into rank 1's window, rank 1 MPI_Get's 5 INTEGER
!     (20 B) from rank 0's window; MPI_Win_fence (checked), MPI_Win_free.
! 16. MPI_File_open of DIR/fortran_io.dat on MPI_COMM_WORLD (create, read-write);
!     each rank MPI_File_write_at's 25 INTEGER (100 B) at offset 100 r with
!     MPI_STATUS_IGNORE and MPI_File_read_at's them back into a status (checked);
!     MPI_File_close.
! 17. MPI_Finalize.
! Any wrong result, status or rank count calls MPI_Abort.
!
! What that implies: exactly what fortran_mpi.f90 states, with MPI_Init_thread 1 in
! place of MPI_Init 1 on each rank.
program fortran_mpi_f08
  use mpi_f08
  implicit none
  integer :: ierr, rank, nranks, p, i, idx(2), nt, key, subrank, provided
  type(MPI_Comm) :: sub
  type(MPI_Win) :: win
  type(MPI_File) :: fh
  type(MPI_Request) :: req(2)
  type(MPI_Status) :: status, statuses(2)
  integer :: i10(10), i8(8), i12(12), gath(6), i3(3), io(25), back(25)
  integer, asynchronous :: i30s(30), i30r(30), i40s(40), i40r(40), i5s(5), i5r(5), one
  integer, asynchronous :: wbuf(16), i4(4), i5(5)
  double precision :: d20(20), d6(6), d6r(6), d9(9)
  double precision, asynchronous :: d7(7)
  logical :: flag
  integer(kind=MPI_ADDRESS_KIND) :: winsize, disp
  integer(kind=MPI_OFFSET_KIND) :: offset
  character(len=4096) :: dir

  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  call check(ierr == MPI_SUCCESS .and. provided >= MPI_THREAD_FUNNELED, 'MPI_THREAD_FUNNELED')
  call check(nranks == 2, 'exactly 2 ranks')
  call get_command_argument(1, dir)
  call check(len_trim(dir) > 0, 'a directory argument')
  p = 1 - rank

  ! 1
  if (rank == 0) then
    i10 = [(i, i = 1, 10)]
    call MPI_Send(i10, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'step 1 ierror')
  else
    call MPI_Recv(i10, 10, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call check(i10(10) == 10, 'step 1 data')
  end if
  ! 2
  if (rank == 1) then
    d20 = 2.5d0
    call MPI_Send(d20, 20, MPI_DOUBLE_PRECISION, 0, 2, MPI_COMM_WORLD)
  else
    call MPI_Recv(d20, 20, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, status)
    call check(status%MPI_SOURCE == 1 .and. status%MPI_TAG == 2, 'step 2 status')
    call check(d20(20) == 2.5d0, 'step 2 data')
  end if
  ! 3
  i30s = rank
  call MPI_Irecv(i30r, 30, MPI_INTEGER, p, 3, MPI_COMM_WORLD, req(1))
  call MPI_Isend(i30s, 30, MPI_INTEGER, p, 3, MPI_COMM_WORLD, req(2))
  call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS, 'step 3 ierror')
  call check(i30r(30) == p, 'step 3 data')
  ! 4
  i40s = rank
  call MPI_Irecv(i40r, 40, MPI_INTEGER, p, 4, MPI_COMM_WORLD, req(1))
  call MPI_Isend(i40s, 40, MPI_INTEGER, p, 4, MPI_COMM_WORLD, req(2))
  call MPI_Waitall(2, req, statuses)
  call check(statuses(1)%MPI_SOURCE == p .and. statuses(1)%MPI_TAG == 4, 'step 4 status')
  call check(i40r(40) == p, 'step 4 data')
  ! 5
  i5s = rank
  call MPI_Irecv(i5r, 5, MPI_INTEGER, p, 5, MPI_COMM_WORLD, req(1))
  call MPI_Isend(i5s, 5, MPI_INTEGER, p, 5, MPI_COMM_WORLD, req(2))
  do i = 1, 2
    call MPI_Waitany(2, req, idx(i), status)
  end do
  ! distinct indices (1-based; MPICH 4.0's mpi_f08 gives them 0-based, pmodels/mpich#6270)
  call check(idx(1) /= idx(2) .and. all(idx >= 0 .and. idx <= 2), 'step 5 indices')
  call check(all(req == MPI_REQUEST_NULL), 'step 5 requests done')
  call check(i5r(5) == p, 'step 5 data')
  ! 6
  if (rank == 0) then
    d7 = 6.0d0
    call MPI_Isend(d7, 7, MPI_DOUBLE_PRECISION, 1, 6, MPI_COMM_WORLD, req(1))
  else
    call MPI_Irecv(d7, 7, MPI_DOUBLE_PRECISION, 0, 6, MPI_COMM_WORLD, req(1))
  end if
  nt = 0
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req(1), flag, status)
    nt = nt + 1
  end do
  if (rank == 1) call check(d7(7) == 6.0d0 .and. status%MPI_SOURCE == 0, 'step 6')
  open(unit=10, file=trim(dir)//'/test_calls.'//achar(48 + rank), status='replace', action='write')
  write(10, '(I0)') nt
  close(10)
  ! 7
  if (rank == 0) then
    i8 = 7
    call MPI_Send_init(i8, 8, MPI_INTEGER, 1, 7, MPI_COMM_WORLD, req(1))
  else
    call MPI_Recv_init(i8, 8, MPI_INTEGER, 0, 7, MPI_COMM_WORLD, req(1))
  end if
  do i = 1, 3
    call MPI_Start(req(1))
    if (rank == 0) then
      call MPI_Wait(req(1), MPI_STATUS_IGNORE)
    else
      call MPI_Wait(req(1), status)
      call check(status%MPI_SOURCE == 0 .and. status%MPI_TAG == 7, 'step 7 status')
    end if
  end do
  call MPI_Request_free(req(1))
  ! 8
  if (rank == 0) then
    one = 8
    call MPI_Isend(one, 1, MPI_INTEGER, 1, 8, MPI_COMM_WORLD, req(1))
    call MPI_Request_free(req(1))
  else
    call MPI_Recv(one, 1, MPI_INTEGER, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call check(one == 8, 'step 8 data')
  end if
  ! 9
  i12 = rank + 9
  call MPI_Bcast(i12, 12, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call check(i12(12) == 9, 'step 9 data')
  ! 10
  d6 = rank + 1
  call MPI_Allreduce(d6, d6r, 6, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  call check(d6r(6) == 3.0d0, 'step 10 data')
  ! 11
  d9 = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, d9, 9, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  call check(d9(9) == 3.0d0, 'step 11 data')
  ! 12
  gath = -1
  gath(3 * rank + 1:3 * rank + 3) = rank + 12
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gath, 3, MPI_INTEGER, MPI_COMM_WORLD)
  call check(gath(1) == 12 .and. gath(6) == 13, 'step 12 data')
  ! 13
  call MPI_Barrier(MPI_COMM_WORLD)
  ! 14
  key = p
  call MPI_Comm_split(MPI_COMM_WORLD, 0, key, sub)
  call MPI_Comm_rank(sub, subrank)
  call check(subrank == p, 'step 14 reversed ranks')
  if (rank == 1) then
    i3 = 14
    call MPI_Send(i3, 3, MPI_INTEGER, 1, 14, sub)
  else
    call MPI_Recv(i3, 3, MPI_INTEGER, 0, 14, sub, status)
    call check(status%MPI_SOURCE == 0 .and. i3(3) == 14, 'step 14 status')
  end if
  call MPI_Comm_free(sub)
  ! 15
  wbuf = [(100 * rank + i, i = 1, 16)]
  winsize = 64
  call MPI_Win_create(wbuf, winsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win)
  call MPI_Win_fence(0, win)
  if (rank == 0) then
    i4 = 15
    disp = 0
    call MPI_Put(i4, 4, MPI_INTEGER, 1, disp, 4, MPI_INTEGER, win)
  else
    disp = 8
    call MPI_Get(i5, 5, MPI_INTEGER, 0, disp, 5, MPI_INTEGER, win)
  end if
  call MPI_Win_fence(0, win)
  if (rank == 1) then
    call check(wbuf(4) == 15 .and. wbuf(5) == 105, 'step 15 put')
    call check(i5(1) == 9 .and. i5(5) == 13, 'step 15 get')
  end if
  call MPI_Win_free(win)
  ! 16
  io = [(1000 * rank + i, i = 1, 25)]
  back = 0
  call MPI_File_open(MPI_COMM_WORLD, trim(dir)//'/fortran_io.dat', &
                     MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
  call check(ierr == MPI_SUCCESS, 'step 16 open')
  offset = 100 * rank
  call MPI_File_write_at(fh, offset, io, 25, MPI_INTEGER, MPI_STATUS_IGNORE)
  call MPI_File_read_at(fh, offset, back, 25, MPI_INTEGER, status)
  call check(all(back == io), 'step 16 data')
  call MPI_File_close(fh)
  ! 17
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      write(0, '(A,I0,A,A)') 'rank ', rank, ': failed: ', what
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
  end subroutine check

end program fortran_mpi_f08
