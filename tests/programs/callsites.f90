! Call sites of a Fortran program (tests/test_profile_callsites.py reads the lines of
! the comments marked SITE: from this file).  Built with -cpp: -DF08 for `use mpi_f08`,
! -DMPIF_H for include 'mpif.h', else `use mpi`.  Rank 0 sends 3 messages from one
! line and 1 from another; rank 1 receives 3 with MPI_Recv and 1 with MPI_Irecv and
! MPI_Wait (a hand-written Fortran wrapper); both then call MPI_Barrier twice.
program callsites_f
#if defined(F08)
  use mpi_f08
#elif !defined(MPIF_H)
  use mpi
#endif
  implicit none
#if defined(MPIF_H)
  include 'mpif.h'
#endif
#if defined(F08)
  type(MPI_Request) :: req
#else
  integer :: req
#endif
  integer :: rank, ierr, i, buf(4)
  buf = 0
  call MPI_Init(ierr) ! SITE: init
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  if (rank == 0) then
    do i = 1, 3
      call MPI_Send(buf, 4, MPI_INTEGER, 1, 7, MPI_COMM_WORLD, ierr) ! SITE: send
    end do
    call MPI_Send(buf, 4, MPI_INTEGER, 1, 8, MPI_COMM_WORLD, ierr) ! SITE: send2
  else if (rank == 1) then
    do i = 1, 3
      call MPI_Recv(buf, 4, MPI_INTEGER, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr) ! SITE: recv
    end do
    call MPI_Irecv(buf, 4, MPI_INTEGER, 0, 8, MPI_COMM_WORLD, req, ierr) ! SITE: irecv
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr) ! SITE: wait
  end if
  do i = 1, 2
    call MPI_Barrier(MPI_COMM_WORLD, ierr) ! SITE: barrier
  end do
  call MPI_Finalize(ierr) ! SITE: finalize
end program callsites_f
